import { describe, expect, it } from 'vitest';
import { packMicroBatch, planPacking } from './index.js';

const seqs = [[11, 12, 13], [21, 22], [31], [41, 42, 43, 44]];

describe('packMicroBatch', () => {
  it('concatenates a bin into one row with cu_seqlens, restarted positions and sequence ids', () => {
    const mb = packMicroBatch(seqs, [1, 3, 0]);
    expect(Array.from(mb.inputIds)).toEqual([21, 22, 41, 42, 43, 44, 11, 12, 13]);
    expect(Array.from(mb.cuSeqlens)).toEqual([0, 2, 6, 9]);
    expect(Array.from(mb.positionIds)).toEqual([0, 1, 0, 1, 2, 3, 0, 1, 2]);
    expect(Array.from(mb.sequenceIds)).toEqual([1, 1, 3, 3, 3, 3, 0, 0, 0]);
    expect(Array.from(mb.segmentIds)).toEqual([0, 0, 1, 1, 1, 1, 2, 2, 2]);
    expect(mb.numPadTokens).toBe(0);
  });

  it('lays out per-token fields alongside the ids, 0 on pad tokens', () => {
    const lossMask = seqs.map((s) => s.map((_, t) => (t === 0 ? 0 : 1)));
    const targets = seqs.map((s) => s.map((id) => id + 1));
    const mb = packMicroBatch(seqs, [3, 1], { fields: { lossMask, targets }, padToMultipleOf: 4 });
    expect(Array.from(mb.fields.targets)).toEqual([42, 43, 44, 45, 22, 23, 0, 0]);
    expect(Array.from(mb.fields.lossMask)).toEqual([0, 1, 1, 1, 0, 1, 0, 0]);
    expect(Array.from(mb.segmentIds)).toEqual([0, 0, 0, 0, 1, 1, 2, 2]);
  });

  it('names the field and the sequence whose values do not match its tokens', () => {
    expect(() => packMicroBatch(seqs, [0, 1], { fields: { lossMask: [[1, 1, 1], [1]] } })).toThrow(
      /fields\.lossMask\[1\] has 1 values for the 2 tokens of sequence 1/,
    );
  });

  it('gives padding sequences (index >= sequences.length) an empty segment', () => {
    const mb = packMicroBatch(seqs, [2, 4]);
    expect(Array.from(mb.inputIds)).toEqual([31]);
    expect(Array.from(mb.cuSeqlens)).toEqual([0, 1, 1]);
  });

  it('pads the row to a multiple with a trailing pad segment (RL2 slide_along_cp)', () => {
    const mb = packMicroBatch(seqs, [0, 2], { padToMultipleOf: 3 });
    expect(Array.from(mb.inputIds)).toEqual([11, 12, 13, 31, 0, 0]);
    expect(Array.from(mb.cuSeqlens)).toEqual([0, 3, 4, 6]);
    expect(Array.from(mb.positionIds)).toEqual([0, 1, 2, 0, 0, 1]);
    expect(Array.from(mb.sequenceIds)).toEqual([0, 0, 0, 2, -1, -1]);
    expect(mb.numPadTokens).toBe(2);
  });

  it('lays out every token of a planned batch exactly once, each row within the budget', () => {
    const sequences = Array.from({ length: 40 }, (_, i) =>
      Array.from({ length: 1 + ((i * 37) % 23) }, (_, t) => i * 100 + t),
    );
    const plan = planPacking(
      sequences.map((s) => s.length),
      { maxTokensPerRank: 64, dpSize: 4 },
    );
    const seen: number[] = [];
    plan.bins.forEach((bin, b) => {
      const mb = packMicroBatch(sequences, bin);
      expect(mb.inputIds.length).toBe(plan.loads[b]);
      expect(mb.inputIds.length).toBeLessThanOrEqual(64);
      seen.push(...mb.inputIds);
    });
    expect(seen.sort((x, y) => x - y)).toEqual(sequences.flat().sort((x, y) => x - y));
  });

  it('rejects a bad padToMultipleOf or bin entry', () => {
    expect(() => packMicroBatch(seqs, [0], { padToMultipleOf: 0 })).toThrow(
      /padToMultipleOf must be/,
    );
    expect(() => packMicroBatch(seqs, [-1])).toThrow(/bin entry -1/);
  });
});
