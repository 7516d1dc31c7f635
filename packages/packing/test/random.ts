/**
 * Seeded test inputs for packing's property tests and bench (mulberry32; Box-Muller for the
 * log-normal). Test-only: rl2's product code draws from `SeededRng` in @rl2/data, which this leaf
 * package does not depend on. Kept as mulberry32 because the bench figures quoted in the README
 * come from `lognormalLengths(n, 2024, ...)`; changing the generator would change them.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** [n] integer lengths >= 1 drawn from round(exp(mu + sigma * N(0, 1))), capped at `cap`. */
export function lognormalLengths(
  n: number,
  seed: number,
  mu = 6,
  sigma = 1,
  cap = Infinity,
): number[] {
  const rand = seededRandom(seed);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    out.push(Math.min(cap, Math.max(1, Math.round(Math.exp(mu + sigma * z)))));
  }
  return out;
}
