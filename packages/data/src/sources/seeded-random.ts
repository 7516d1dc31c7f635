/**
 * mulberry32: the one small seeded PRNG of rl2's data-side code (the train/test split here,
 * rollout's toy generator). Uniform floats in [0, 1) from a 32-bit seed; the same seed gives the
 * same stream on every machine.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
