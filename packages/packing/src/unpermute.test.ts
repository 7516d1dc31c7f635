import { describe, expect, it } from 'vitest';
import { PackingError, invertPermutation, unpermute } from './index.js';

describe('unpermute', () => {
  it('puts packed values back in original order and drops padding slots', () => {
    // sequences 0..3, one padding slot (4); packed order 2, 4, 0, 3, 1
    const permutation = [2, 4, 0, 3, 1];
    expect(unpermute([20, -1, 0, 30, 10], permutation, 4)).toEqual([0, 10, 20, 30]);
  });

  it('is the inverse of gathering in packed order', () => {
    const permutation = Int32Array.from([3, 0, 2, 1]);
    const original = ['a', 'b', 'c', 'd'];
    const packed = Array.from(permutation, (i) => original[i]);
    expect(unpermute(packed, permutation, 4)).toEqual(original);
    expect(Array.from(invertPermutation(permutation))).toEqual([1, 3, 2, 0]);
  });

  it('rejects a packed array of the wrong size or a wrong sequence count', () => {
    expect(() => unpermute([1, 2], [0, 1, 2], 3)).toThrow(PackingError);
    expect(() => unpermute([1, 2], [0, 1, 2], 3)).toThrow(
      /got 2 packed values for a permutation of 3/,
    );
    expect(() => unpermute([1, 2, 3], [0, 1, 5], 3)).toThrow(/covers 2 of 3 sequences/);
  });
});
