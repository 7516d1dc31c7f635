# Independent reference for packages/data/src/random/seeded-rng.test.ts: splitmix32 seeding (murmur3
# fmix32 finaliser) and xoshiro128** (Blackman & Vigna). Run: python3 packages/data/scripts/seeded_rng_reference.py
M = 0xFFFFFFFF
def splitmix32_words(seed, n=4):
    x = seed & M
    out = []
    for _ in range(n):
        x = (x + 0x9E3779B9) & M
        z = x
        z = ((z ^ (z >> 16)) * 0x85EBCA6B) & M
        z = ((z ^ (z >> 13)) * 0xC2B2AE35) & M
        out.append((z ^ (z >> 16)) & M)
    return out
def rotl(v, k): return ((v << k) | (v >> (32 - k))) & M
class X:
    def __init__(self, s): self.s = list(s)
    def u32(self):
        s = self.s
        r = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 9) & M
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 11)
        return r
    def f(self): return self.u32() / 2**32
    def perm(self, n):
        p = list(range(n))
        for i in range(n - 1, 0, -1):
            j = int(self.f() * (i + 1))
            p[i], p[j] = p[j], p[i]
        return p
print('seed42 state', splitmix32_words(42))
print('seed0 state', splitmix32_words(0))
x = X(splitmix32_words(42)); print('seed42 u32', [x.u32() for _ in range(3)])
x = X(splitmix32_words(42)); print('seed42 floats', [repr(x.f()) for _ in range(3)])
x = X([1,2,3,4]); print('1234', [x.u32() for _ in range(3)])
x = X(splitmix32_words(7)); print('perm7 10', x.perm(10), 'state after', x.s)
