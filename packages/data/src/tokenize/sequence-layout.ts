import { DataError } from '../errors.js';
import type { TokenSequence } from './token-sequence.js';

/**
 * One training sequence in RL2's shifted layout (length T each): the model reads `states`
 * and is scored on predicting `actions` = states shifted by one; `actionMask` is the loss
 * mask of the actions, `eosMask` is 1 at the last position, `positionIds` restart at 0.
 */
export interface ShiftedSequence {
  states: number[];
  actions: number[];
  actionMask: number[];
  eosMask: number[];
  positionIds: number[];
}

/**
 * The shifted layout: states = tokens[:-1], actions = tokens[1:], actionMask = mask[1:],
 * then everything truncated to `maxLength` positions; eosMask marks the last kept position.
 * Needs at least 2 tokens.
 */
export function toShiftedSequence(seq: TokenSequence, maxLength?: number): ShiftedSequence {
  if (seq.tokens.length < 2)
    throw new DataError(
      'INVALID_ARGUMENT',
      `A sequence needs at least 2 tokens to shift, got ${seq.tokens.length}.`,
    );
  const n = Math.min(seq.tokens.length - 1, limit(maxLength));
  const eosMask = new Array<number>(n).fill(0);
  eosMask[n - 1] = 1;
  return {
    states: seq.tokens.slice(0, n),
    actions: seq.tokens.slice(1, n + 1),
    actionMask: seq.mask.slice(1, n + 1),
    eosMask,
    positionIds: Array.from({ length: n }, (_, i) => i),
  };
}

/** A reward-model sequence: no shift; the reward is read where `eosMask` is 1 (the last kept token). */
export interface RewardSequence {
  states: number[];
  actionMask: number[];
  eosMask: number[];
  positionIds: number[];
}

/** The unshifted RM layout: tokens truncated to `maxLength`, eosMask at the last kept token. */
export function toRewardSequence(seq: TokenSequence, maxLength?: number): RewardSequence {
  if (seq.tokens.length < 1)
    throw new DataError('INVALID_ARGUMENT', 'A reward sequence needs at least 1 token.');
  const n = Math.min(seq.tokens.length, limit(maxLength));
  const eosMask = new Array<number>(n).fill(0);
  eosMask[n - 1] = 1;
  return {
    states: seq.tokens.slice(0, n),
    actionMask: seq.mask.slice(0, n),
    eosMask,
    positionIds: Array.from({ length: n }, (_, i) => i),
  };
}

function limit(maxLength: number | undefined): number {
  if (maxLength === undefined) return Number.POSITIVE_INFINITY;
  if (!Number.isInteger(maxLength) || maxLength < 1)
    throw new DataError(
      'INVALID_ARGUMENT',
      `max_length must be a positive integer, got ${maxLength}.`,
    );
  return maxLength;
}
