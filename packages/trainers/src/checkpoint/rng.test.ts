import { describe, expect, it } from 'vitest';
import { Rng } from './rng.js';

describe('Rng', () => {
  it('xoshiro128** reference output from state [1, 2, 3, 4]', () => {
    // First outputs of the reference C implementation seeded with s = {1, 2, 3, 4}.
    const r = new Rng([1, 2, 3, 4]);
    expect([r.nextUint32(), r.nextUint32(), r.nextUint32()]).toEqual([11520, 0, 5927040]);
  });
  it('restoring the state continues the same stream', () => {
    const a = new Rng(42);
    a.permutation(10);
    const b = new Rng(a.state());
    expect(b.permutation(50)).toEqual(a.permutation(50));
  });
  it('permutations are permutations and seeds differ', () => {
    const p = new Rng(1).permutation(100);
    expect([...p].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(new Rng(1).permutation(20)).not.toEqual(new Rng(2).permutation(20));
  });
});
