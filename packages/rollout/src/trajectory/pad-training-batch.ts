import type { TrainingBatch } from './to-training-batch.js';

/** A TrainingBatch as right-padded rows, one sequence per row: every field [B][T] (T = longest). */
export interface PaddedTrainingBatch {
  states: number[][];
  actions: number[][];
  actionMask: number[][];
  llmLogps: number[][];
  rewards: number[][];
  /** [B] trajectory id per row (the @rl2/algos TrajectoryBatch.trajectoryIds per-row form). */
  trajectoryIds: number[];
}

/**
 * Pads each sequence of `batch` to the longest one (token ids with `padTokenId`, everything
 * else with 0, so padding is never an action). Feed the rows to tensor2d for the @rl2/algos
 * functions, or pack them with @rl2/packing instead when sequences vary a lot in length.
 */
export function padTrainingBatch(batch: TrainingBatch, padTokenId = 0): PaddedTrainingBatch {
  const t = Math.max(0, ...batch.sequences.map((s) => s.states.length));
  const pad = (xs: number[], v: number) => [...xs, ...Array(t - xs.length).fill(v)];
  return {
    states: batch.sequences.map((s) => pad(s.states, padTokenId)),
    actions: batch.sequences.map((s) => pad(s.actions, padTokenId)),
    actionMask: batch.sequences.map((s) => pad(s.actionMask, 0)),
    llmLogps: batch.sequences.map((s) => pad(s.llmLogps, 0)),
    rewards: batch.sequences.map((s) => pad(s.rewards, 0)),
    trajectoryIds: batch.sequences.map((s) => s.trajectoryId),
  };
}
