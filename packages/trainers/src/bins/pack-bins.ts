import { type RankMicroBatch, planPacking, rankMicroBatches } from '@rl2/packing';
import type { TrainingItem } from '../dataset/training-item.js';
import { TrainersError } from '../errors.js';

/**
 * One packed micro-batch: the sequences of a bin concatenated into one row of T tokens.
 * `segmentIds` number the sequences 0..S-1 in bin order (pairs stay adjacent: chosen, rejected).
 */
export interface PackedBin {
  readonly inputIds: number[];
  readonly positionIds: number[];
  readonly segmentIds: number[];
  readonly targets: number[];
  readonly lossMask: number[];
  readonly numSequences: number;
  /**
   * A stand-in pass (a copy of the step's heaviest bin) for a rank with fewer bins than the
   * others under ZeRO-3, whose passes are collectives: run, multiplied by 0, not counted.
   */
  readonly idle?: boolean;
}

/**
 * Balanced packing of one step's items into micro-batches of at most `budget` tokens
 * (RL2: Karmarkar-Karp over sequence lengths, n = ceil(total / budget) bins, more if needed).
 * With `groupSize` 2 each item's (chosen, rejected) pair shares a bin. Empty bins are dropped.
 * With data parallelism the bin count is a multiple of `dp.size` and rank r gets the r-th
 * contiguous slice of the bins (heaviest first, so rank 0 always holds a non-empty bin).
 * `lockstep` (ZeRO-3) keeps every rank at the same number of bins: a slot left empty becomes an
 * `idle` copy of the heaviest bin.
 */
export function packBins(
  items: readonly TrainingItem[],
  budget: number,
  groupSize: 1 | 2,
  budgetKey: string,
  dp: { readonly rank: number; readonly size: number } = { rank: 0, size: 1 },
  lockstep = false,
): PackedBin[] {
  const sequences = items.flatMap((it) => it.sequences);
  for (const it of items) {
    const len = it.sequences.reduce((s, q) => s + q.inputIds.length, 0);
    const unit = groupSize === 2 ? len : Math.max(...it.sequences.map((q) => q.inputIds.length));
    if (unit > budget) {
      throw new TrainersError(
        'BAD_DATA',
        `${it.origin}: ${groupSize === 2 ? 'the chosen+rejected pair has' : 'a sequence has'} ` +
          `${unit} tokens, more than ${budgetKey}=${budget}; raise ${budgetKey} or set ` +
          'data.train.max_length',
      );
    }
  }
  const plan = planPacking(
    sequences.map((s) => s.inputIds.length),
    { maxTokensPerRank: budget, dpSize: dp.size, groupSize },
  );
  const packed = rankMicroBatches(
    plan,
    dp.rank,
    sequences.map((s) => s.inputIds),
    {
      lockstep,
      fields: {
        targets: sequences.map((s) => s.targets),
        lossMask: sequences.map((s) => s.lossMask),
      },
    },
  );
  return packed.map(packedBin);
}

/**
 * A micro-batch of @rl2/packing as the trainers' passes take it (plain arrays; positions
 * restart at 0 per sequence, as every tokenized sequence's own do).
 */
export function packedBin(mb: RankMicroBatch<'targets' | 'lossMask'>): PackedBin {
  return {
    inputIds: Array.from(mb.inputIds),
    positionIds: Array.from(mb.positionIds),
    segmentIds: Array.from(mb.segmentIds),
    targets: Array.from(mb.fields.targets),
    lossMask: Array.from(mb.fields.lossMask),
    numSequences: mb.members.length,
    ...(mb.idle ? { idle: true } : {}),
  };
}

/** Global counts over all bins of a step: what every loss divides by. */
export interface StepTotals {
  /** Loss-mask tokens (action tokens) over the step. */
  readonly actionTokens: number;
  /** Sequences with at least one loss-mask token. */
  readonly sequences: number;
  /** Preference pairs (RM/DPO). */
  readonly pairs: number;
  /** All tokens, for tokens/s. */
  readonly tokens: number;
}

/** Adds up `StepTotals` over the bins of a step (on one rank these are the global totals; sum them over data-parallel ranks). */
export function stepTotals(bins: readonly PackedBin[]): StepTotals {
  let actionTokens = 0;
  let sequences = 0;
  let tokens = 0;
  let pairsTimesTwo = 0;
  for (const b of bins) {
    if (b.idle) continue;
    tokens += b.inputIds.length;
    pairsTimesTwo += b.numSequences;
    const seen = new Set<number>();
    b.lossMask.forEach((m, t) => {
      if (m > 0) {
        actionTokens += 1;
        seen.add(b.segmentIds[t]);
      }
    });
    sequences += seen.size;
  }
  return { actionTokens, sequences, pairs: pairsTimesTwo / 2, tokens };
}
