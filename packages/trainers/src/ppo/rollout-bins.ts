import { planPacking, rankMicroBatches } from '@rl2/packing';
import * as tf from '@tensorflow/tfjs-core';
import type { TrainingSequence } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import { type PackedBin, packedBin } from '../bins/pack-bins.js';

/** A packed micro-batch of rollout sequences that remembers which sequences it holds. */
export interface RolloutBin extends PackedBin {
  /** Indices into the step's sequence list, in the bin's order. */
  readonly members: readonly number[];
}

/**
 * Balanced packing (Karmarkar-Karp, @rl2/packing) of rollout sequences into micro-batches of
 * at most `budget` tokens, keeping each bin's member indices so per-sequence quantities
 * (old logps, advantages, values) can be laid out alongside with `binField`.
 * `indices` picks the sequences of this update (a chunk with update_per_rollout > 1).
 * With data parallelism (`dp`) the bin count is a multiple of `dp.size` and rank r keeps the
 * r-th contiguous slice of the bins (heaviest first), as `packBins` does, and `lockstep`
 * (ZeRO-3) fills empty slots with `idle` copies of the heaviest bin.
 */
export function packRolloutBins(
  sequences: readonly TrainingSequence[],
  indices: readonly number[],
  budget: number,
  budgetKey: string,
  dp: { readonly rank: number; readonly size: number } = { rank: 0, size: 1 },
  lockstep = false,
): RolloutBin[] {
  for (const i of indices) {
    const len = sequences[i].states.length;
    if (len > budget) {
      throw new TrainersError(
        'INVALID_ARGUMENT',
        `a rollout sequence has ${len} tokens, more than ${budgetKey}=${budget}; ` +
          `raise ${budgetKey} or lower rollout.*_sampling_params.max_new_tokens / rollout.max_turns`,
      );
    }
  }
  const plan = planPacking(
    indices.map((i) => sequences[i].states.length),
    { maxTokensPerRank: budget, dpSize: dp.size, groupSize: 1 },
  );
  const picked = indices.map((i) => sequences[i]);
  const packed = rankMicroBatches(
    plan,
    dp.rank,
    picked.map((q) => q.states),
    {
      lockstep,
      fields: { targets: picked.map((q) => q.actions), lossMask: picked.map((q) => q.actionMask) },
    },
  );
  return packed.map((mb) => ({ ...packedBin(mb), members: mb.members.map((s) => indices[s]) }));
}

/** A per-sequence quantity (`perSequence[i]` is `[T_i]`) laid out as the bin's row `[T]`. */
export function binField(bin: RolloutBin, perSequence: readonly (readonly number[])[]): number[] {
  return bin.members.flatMap((i) => perSequence[i]);
}

/** A per-sequence quantity as the bin's packed row tensor `[1, T]` (float32), as the losses take it. */
export function binRow(bin: RolloutBin, perSequence: readonly (readonly number[])[]): tf.Tensor2D {
  const values = binField(bin, perSequence);
  return tf.tensor2d(values, [1, values.length], 'float32');
}

/** Writes a bin's row `[T]` back to per-sequence arrays. */
export function scatterBinField(
  bin: RolloutBin,
  row: ArrayLike<number>,
  into: number[][],
  sequences: readonly TrainingSequence[],
): void {
  let at = 0;
  for (const i of bin.members) {
    const n = sequences[i].states.length;
    into[i] = Array.from({ length: n }, (_, t) => row[at + t]);
    at += n;
  }
}
