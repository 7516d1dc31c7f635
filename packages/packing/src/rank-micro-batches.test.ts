import { describe, expect, it } from 'vitest';
import { packMicroBatch, planPacking, rankBins, rankMicroBatches } from './index.js';

const seqs = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10, 11], [12], [13, 14, 15]];
const plan = (dpSize: number, budget = 8) =>
  planPacking(
    seqs.map((s) => s.length),
    { maxTokensPerRank: budget, dpSize },
  );

describe('rankMicroBatches', () => {
  it("packs each of the rank's bins, in order, as packMicroBatch lays them out", () => {
    const p = plan(2);
    for (const rank of [0, 1]) {
      const batches = rankMicroBatches(p, rank, seqs);
      const bins = rankBins(p, rank).filter((b) => b.some((i) => i < seqs.length));
      expect(batches.map((b) => b.members)).toEqual(bins);
      batches.forEach((b, k) => {
        expect(Array.from(b.inputIds)).toEqual(Array.from(packMicroBatch(seqs, bins[k]).inputIds));
        expect(b.idle).toBe(false);
      });
    }
  });

  it('drops bins of padding alone, or under lockstep puts idle copies of the heaviest bin there', () => {
    // 2 sequences over 4 ranks: two bins hold only padding sequences
    const two = [[1, 2, 3], [4]];
    const p = planPacking([3, 1], { maxTokensPerRank: 8, dpSize: 4 });
    const real = [0, 1, 2, 3].map((r) => rankMicroBatches(p, r, two));
    expect(real.map((r) => r.length)).toEqual([1, 1, 0, 0]);
    const locked = [0, 1, 2, 3].map((r) => rankMicroBatches(p, r, two, { lockstep: true }));
    expect(locked.map((r) => r.length)).toEqual([1, 1, 1, 1]);
    expect(locked[3][0].idle).toBe(true);
    expect(locked[3][0].members).toEqual(locked[0][0].members);
    expect(locked[0][0].idle).toBe(false);
  });

  it('rejects sequences the plan was not made for', () => {
    expect(() => rankMicroBatches(plan(1), 0, seqs.slice(1))).toThrow(
      /got 4 sequences for a plan of 5/,
    );
  });
});
