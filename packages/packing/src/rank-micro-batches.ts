import { PackingError } from './errors.js';
import {
  type MicroBatchLayout,
  type MicroBatchOptions,
  packMicroBatch,
} from './pack-micro-batch.js';
import type { PackingPlan } from './plan-packing.js';
import { rankBins } from './rank-bins.js';

/** One packed micro-batch of a data-parallel rank, see {@link rankMicroBatches}. */
export interface RankMicroBatch<F extends string = never> extends MicroBatchLayout<F> {
  /** Sequence indices it holds, in bin order (padding sequences left out). */
  members: number[];
  /**
   * A stand-in pass (a copy of the plan's heaviest bin) for a rank with fewer non-empty bins
   * than the others under `lockstep`: run it for the collectives, weigh it 0.
   */
  idle: boolean;
}

/** Options of {@link rankMicroBatches}. */
export interface RankMicroBatchOptions<F extends string = never> extends MicroBatchOptions<F> {
  /**
   * Keep every rank at `plan.binsPerRank` passes (ZeRO-3, where every pass is a collective): a
   * bin of padding alone becomes an `idle` copy of the heaviest bin instead of being dropped.
   */
  lockstep?: boolean;
}

/**
 * The micro-batches data-parallel rank `rank` trains on for one plan: its slice of the bins
 * ({@link rankBins}), each packed by {@link packMicroBatch} without its padding sequences.
 * A bin of padding alone is dropped, or under `lockstep` replaced by an idle copy of the
 * heaviest bin (the plan's first, never empty), so rank 0 always holds a real bin.
 *
 * @param sequences [plan.numSequences][len_i] token ids, as the plan's lengths were measured
 */
export function rankMicroBatches<F extends string = never>(
  plan: PackingPlan,
  rank: number,
  sequences: readonly ArrayLike<number>[],
  options: RankMicroBatchOptions<F> = {},
): RankMicroBatch<F>[] {
  if (sequences.length !== plan.numSequences) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `got ${sequences.length} sequences for a plan of ${plan.numSequences}; pass the sequences the plan was made for.`,
    );
  }
  const { lockstep = false, ...layout } = options;
  const pack = (bin: readonly number[], idle: boolean): RankMicroBatch<F> | undefined => {
    const members = bin.filter((i) => i < sequences.length);
    if (members.length === 0) return undefined;
    return { ...packMicroBatch(sequences, members, layout), members, idle };
  };
  const batches: RankMicroBatch<F>[] = [];
  for (const bin of rankBins(plan, rank)) {
    const batch = pack(bin, false) ?? (lockstep ? pack(plan.bins[0], true) : undefined);
    if (batch) batches.push(batch);
  }
  return batches;
}
