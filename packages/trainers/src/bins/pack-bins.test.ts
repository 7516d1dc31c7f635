import { describe, expect, it } from 'vitest';
import type { TrainingItem } from '../dataset/training-item.js';
import { packBins, stepTotals } from './pack-bins.js';

const seq = (n: number, mask: number[] = Array(n).fill(1)) => ({
  inputIds: Array.from({ length: n }, (_, i) => 10 + i),
  positionIds: Array.from({ length: n }, (_, i) => i),
  targets: Array.from({ length: n }, (_, i) => 11 + i),
  lossMask: mask,
});
const item = (...lens: number[]): TrainingItem => ({
  origin: 'f row 1',
  sequences: lens.map((n) => seq(n)),
});

describe('packBins', () => {
  it('packs every token exactly once into balanced bins under the budget', () => {
    const items = [item(5), item(3), item(4), item(2), item(6)];
    const bins = packBins(items, 10, 1, 'actor.max_length_per_device');
    expect(bins.length).toBe(2); // ceil(20 / 10)
    expect(bins.map((b) => b.inputIds.length).sort()).toEqual([10, 10]);
    for (const b of bins) {
      // positions restart at 0 for each segment
      for (const [t, p] of b.positionIds.entries())
        expect(p === 0).toBe(t === 0 || b.segmentIds[t] !== b.segmentIds[t - 1]);
    }
    expect(stepTotals(bins)).toEqual({ actionTokens: 20, sequences: 5, pairs: 2.5, tokens: 20 });
  });

  it('keeps (chosen, rejected) pairs adjacent in one bin', () => {
    const items = [item(3, 4), item(5, 1), item(2, 2)];
    const bins = packBins(items, 8, 2, 'critic.max_length_per_device');
    for (const b of bins) expect(b.numSequences % 2).toBe(0);
    expect(stepTotals(bins).pairs).toBe(3);
  });

  it('names the row and the key when one sequence is over budget', () => {
    expect(() =>
      packBins(
        [item(3), { origin: 'data.jsonl row 7', sequences: [seq(12)] }],
        10,
        1,
        'actor.max_length_per_device',
      ),
    ).toThrow(/data\.jsonl row 7.*12 tokens.*actor\.max_length_per_device=10/);
  });
  it('data parallel: rank r gets the r-th slice of a bin count divisible by the ranks; slices cover the step once', () => {
    const items = [item(5), item(3), item(4), item(2), item(6), item(7), item(1)];
    const ranks = [0, 1, 2].map((rank) => packBins(items, 10, 1, 'k', { rank, size: 3 }));
    // 28 tokens, budget 10 -> 3 bins: one per rank, heaviest on rank 0
    expect(ranks.map((r) => r.length)).toEqual([1, 1, 1]);
    const tokens = ranks.flat().reduce((s, b) => s + b.inputIds.length, 0);
    expect(tokens).toBe(28);
    expect(ranks.flat().reduce((s, b) => s + b.numSequences, 0)).toBe(7);
    expect(ranks[0][0].inputIds.length).toBeGreaterThanOrEqual(ranks[2][0].inputIds.length);
    // fewer sequences than ranks: the last rank has nothing to train on
    expect(packBins([item(5)], 10, 1, 'k', { rank: 1, size: 2 })).toEqual([]);
  });
});
