/**
 * Mixes a base seed and a counter into a new 32-bit seed, so each generation request without a
 * seed of its own gets an unrelated stream (a `SeededRng` from @rl2/data).
 */
export function deriveSeed(seed: number, index: number): number {
  let z = (seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0;
  z = Math.imul(z ^ (z >>> 15), 0x2c1b3c6d);
  z = Math.imul(z ^ (z >>> 12), 0x297a2d39);
  return (z ^ (z >>> 15)) >>> 0;
}
