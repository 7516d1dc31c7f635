import { describe, expect, it } from 'vitest';
import { mulberry32 } from './seeded-random.js';

describe('mulberry32', () => {
  it('gives the reference stream (values from an independent Python implementation)', () => {
    const r42 = mulberry32(42);
    expect([r42(), r42(), r42()]).toEqual([
      0.6011037519201636, 0.44829055899754167, 0.8524657934904099,
    ]);
    const r0 = mulberry32(0);
    expect([r0(), r0()]).toEqual([0.26642920868471265, 0.0003297457005828619]);
  });

  it('stays in [0, 1) and repeats for the same seed', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    for (let i = 0; i < 1000; i++) {
      const x = a();
      expect(x).toBe(b());
      expect(x >= 0 && x < 1).toBe(true);
    }
  });
});
