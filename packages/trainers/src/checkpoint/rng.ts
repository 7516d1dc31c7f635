/**
 * xoshiro128** (Blackman & Vigna, https://prng.di.unimi.it/): a small seeded PRNG whose whole
 * state is four uint32 words, so a checkpoint can store it and a resumed run continues the
 * exact same stream. Seeded through splitmix32 so nearby seeds give unrelated streams.
 */
export class Rng {
  private s: Uint32Array;

  constructor(seed: number | readonly number[]) {
    if (typeof seed !== 'number') {
      this.s = Uint32Array.from(seed);
      return;
    }
    let x = seed >>> 0;
    const next = () => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s = Uint32Array.from([next(), next(), next(), next()]);
  }

  /** The full state, to store in a checkpoint and pass back to `new Rng(state)`. */
  state(): number[] {
    return Array.from(this.s);
  }

  /** Next uint32. */
  nextUint32(): number {
    const s = this.s;
    const rotl = (v: number, k: number) => ((v << k) | (v >>> (32 - k))) >>> 0;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 32 random bits. */
  next(): number {
    return this.nextUint32() / 2 ** 32;
  }

  /** Standard normal via Box-Muller. */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** A uniformly random permutation of 0..n-1 (Fisher-Yates). */
  permutation(n: number): number[] {
    const p = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [p[i], p[j]] = [p[j], p[i]];
    }
    return p;
  }
}
