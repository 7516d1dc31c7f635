import { describe, expect, it } from 'vitest';
import { toRewardSequence, toShiftedSequence } from './sequence-layout.js';

// Hand-derived: tokens [10, 11, 12, 13, 14], mask [0, 0, 1, 1, 1].
const seq = { tokens: [10, 11, 12, 13, 14], mask: [0, 0, 1, 1, 1] };

describe('toShiftedSequence', () => {
  it('shifts states/actions/mask by one and marks the last position', () => {
    expect(toShiftedSequence(seq)).toEqual({
      states: [10, 11, 12, 13],
      actions: [11, 12, 13, 14],
      actionMask: [0, 1, 1, 1],
      eosMask: [0, 0, 0, 1],
      positionIds: [0, 1, 2, 3],
    });
  });
  it('truncates to max_length positions', () => {
    expect(toShiftedSequence(seq, 2)).toEqual({
      states: [10, 11],
      actions: [11, 12],
      actionMask: [0, 1],
      eosMask: [0, 1],
      positionIds: [0, 1],
    });
  });
  it('rejects a bad max_length and a too-short sequence', () => {
    expect(() => toShiftedSequence(seq, 0)).toThrowError(/max_length/);
    expect(() => toShiftedSequence({ tokens: [1], mask: [1] })).toThrowError(/at least 2/);
  });
});

describe('toRewardSequence', () => {
  it('keeps tokens unshifted with the reward at the last token', () => {
    expect(toRewardSequence(seq, 4)).toEqual({
      states: [10, 11, 12, 13],
      actionMask: [0, 0, 1, 1],
      eosMask: [0, 0, 0, 1],
      positionIds: [0, 1, 2, 3],
    });
  });
});
