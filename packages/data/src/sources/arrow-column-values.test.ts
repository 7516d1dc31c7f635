import { Float64, Int32, Int64, Utf8, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { arrowColumnValues } from './arrow-column-values.js';

describe('arrowColumnValues', () => {
  it('decodes strings, ints, int64 and floats column-wise', () => {
    expect(arrowColumnValues(vectorFromArray(['a', 'é✓', ''], new Utf8()))).toEqual([
      'a',
      'é✓',
      '',
    ]);
    expect(arrowColumnValues(vectorFromArray([1, -2, 3], new Int32()))).toEqual([1, -2, 3]);
    expect(arrowColumnValues(vectorFromArray([1n, 2n ** 60n], new Int64()))).toEqual([
      1,
      '1152921504606846976',
    ]);
    expect(arrowColumnValues(vectorFromArray([0.5, -1.25], new Float64()))).toEqual([0.5, -1.25]);
  });
  it('keeps nulls and respects sliced vectors', () => {
    expect(arrowColumnValues(vectorFromArray(['a', null, 'c'], new Utf8()))).toEqual([
      'a',
      null,
      'c',
    ]);
    expect(
      arrowColumnValues(vectorFromArray(['a', 'b', 'c', 'd'], new Utf8()).slice(1, 3)),
    ).toEqual(['b', 'c']);
    expect(arrowColumnValues(vectorFromArray([1, 2, 3, 4], new Int32()).slice(2))).toEqual([3, 4]);
  });
});
