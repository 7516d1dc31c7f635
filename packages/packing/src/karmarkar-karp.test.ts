import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PackingError, karmarkarKarp } from './index.js';
import { lognormalLengths } from '../test/random.js';

interface PartitionCase {
  name: string;
  k: number;
  lengths: number[];
  bins: number[][];
}
const fixtures: { cases: PartitionCase[] } = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'fixtures', 'partitions.json'), 'utf8'),
);

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('karmarkarKarp', () => {
  it('derives the textbook LDM split of [8, 7, 6, 5, 4] into 2 (16/14, not the optimal 15/15)', () => {
    // {8},{7} -> d 1; {6},{5} -> d 1; {4} + ({8},{7}) -> {11},{8} d 3; + ({6},{5}) -> {16},{14}
    const { bins, loads } = karmarkarKarp([8, 7, 6, 5, 4], 2);
    expect(bins).toEqual([
      [1, 3, 4],
      [0, 2],
    ]);
    expect(loads).toEqual([16, 14]);
  });

  it.each(fixtures.cases.map((c) => [c.name, c] as const))(
    'gives the same partition as RL2 get_seqlen_balanced_partitions: %s',
    (_, c) => {
      const { bins, loads } = karmarkarKarp(c.lengths, c.k);
      expect(bins).toEqual(c.bins);
      expect(loads).toEqual(c.bins.map((b) => sum(b.map((i) => c.lengths[i]))));
    },
  );

  it('puts every item in exactly one bin, loads non-increasing, on long-tailed data', () => {
    for (const [n, k, seed] of [
      [5000, 64, 1],
      [777, 13, 2],
      [50, 64, 3],
    ]) {
      const lengths = lognormalLengths(n, seed, 6, 1.5);
      const { bins, loads } = karmarkarKarp(lengths, k);
      expect(bins).toHaveLength(k);
      const seen = bins.flat().sort((a, b) => a - b);
      expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(loads).toEqual(bins.map((b) => sum(b.map((i) => lengths[i]))));
      for (let j = 1; j < k; j++) expect(loads[j]).toBeLessThanOrEqual(loads[j - 1]);
      // LDM is within the largest item of the mean (a loose but real bound)
      expect(loads[0] - sum(lengths) / k).toBeLessThanOrEqual(Math.max(...lengths));
    }
  });

  it('returns empty surplus bins when k exceeds the item count, and k empty bins for no items', () => {
    expect(karmarkarKarp([3, 1], 4)).toEqual({ bins: [[0], [1], [], []], loads: [3, 1, 0, 0] });
    expect(karmarkarKarp([], 2)).toEqual({ bins: [[], []], loads: [0, 0] });
  });

  it('rejects a negative length or a bad k, naming the value', () => {
    expect(() => karmarkarKarp([1, -2], 2)).toThrow(/lengths\[1\] is -2/);
    expect(() => karmarkarKarp([1, Number.NaN], 2)).toThrow(PackingError);
    expect(() => karmarkarKarp([1, 2], 0)).toThrow(/k must be an integer >= 1, got 0/);
  });
});
