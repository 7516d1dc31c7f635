import { describe, expect, it } from 'vitest';
import { SeededRng } from './seeded-rng.js';

// Reference values from an independent Python implementation of splitmix32 seeding and
// xoshiro128** (scripts/seeded_rng_reference.py; the first test's values are also those of the
// authors' C code for s = {1, 2, 3, 4}).
describe('SeededRng', () => {
  it('xoshiro128** gives the reference outputs from state [1, 2, 3, 4]', () => {
    const r = SeededRng.fromState([1, 2, 3, 4]);
    expect([r.nextUint32(), r.nextUint32(), r.nextUint32()]).toEqual([11520, 0, 5927040]);
  });

  it('seeds through splitmix32 and gives the reference stream', () => {
    expect(new SeededRng(42).state()).toEqual([939911724, 3948730756, 321366731, 3317318717]);
    expect(new SeededRng(0).state()).toEqual([2462723854, 1020716019, 454327756, 1275600319]);
    const r = new SeededRng(42);
    expect([r.nextUint32(), r.nextUint32(), r.nextUint32()]).toEqual([
      2837322924, 544945897, 479756282,
    ]);
    const f = new SeededRng(42);
    expect([f.next(), f.next(), f.next()]).toEqual([
      0.6606157226487994, 0.12688010395504534, 0.11170196393504739,
    ]);
  });

  it('permutation is the reference Fisher-Yates shuffle and leaves the reference state', () => {
    const r = new SeededRng(7);
    expect(r.permutation(10)).toEqual([0, 5, 6, 8, 9, 7, 1, 3, 4, 2]);
    expect(r.state()).toEqual([650483135, 1960491899, 1393766550, 814056606]);
  });

  it('restoring the state continues the same stream', () => {
    const a = new SeededRng(42);
    a.permutation(10);
    const b = SeededRng.fromState(a.state());
    expect(b.permutation(50)).toEqual(a.permutation(50));
    const p = new SeededRng(1).permutation(100);
    expect([...p].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(new SeededRng(1).permutation(20)).not.toEqual(new SeededRng(2).permutation(20));
  });

  it('floats stay in [0, 1), normals have mean 0 and variance 1', () => {
    const r = new SeededRng(3);
    let sum = 0;
    let sq = 0;
    for (let i = 0; i < 20000; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
      const z = r.normal();
      sum += z;
      sq += z * z;
    }
    expect(Math.abs(sum / 20000)).toBeLessThan(0.03);
    expect(Math.abs(sq / 20000 - 1)).toBeLessThan(0.05);
  });

  it('rejects a state that is not four uint32 words, not all zero', () => {
    for (const bad of [42, [1, 2, 3], [0, 0, 0, 0], [1, 2, 3, 2 ** 32], [1, 2, 3, -1], null]) {
      expect(() => SeededRng.fromState(bad)).toThrowError(/four uint32 words/);
    }
  });
});
