import { RolloutError } from '../errors.js';
import type { Trajectory } from './trajectory.js';

/**
 * One sequence with RL2's shift applied, every array [T - 1]: position t predicts
 * `actions[t] = tokenIds[t + 1]` from `states[t] = tokenIds[t]`; `actionMask`, `llmLogps`
 * and `rewards` are those of the predicted token. The first five fields have the names and
 * meaning of @rl2/data's ShiftedSequence, so PPO batches pack like SFT ones.
 */
export interface TrainingSequence {
  states: number[];
  actions: number[];
  actionMask: number[];
  /** 1 at the last position. */
  eosMask: number[];
  /** 0..T-2 (restart at 0 for every sequence). */
  positionIds: number[];
  /** The engine's logprobs of the actions (for TIS and logging). */
  llmLogps: number[];
  rewards: number[];
  /** Which trajectory the sequence belongs to; the G responses of prompt p are p*G .. p*G+G-1. */
  trajectoryId: number;
  /** Which accepted group (prompt) it belongs to: floor(trajectoryId / responsesPerPrompt). */
  promptId: number;
}

/**
 * The training side of a rollout step, plain arrays: one entry per sequence (a multi-turn
 * trajectory may give several). Pad or pack `sequences` into `[B, T]` tensors and pass
 * `trajectoryIds` per row to the @rl2/algos advantage functions (TrajectoryBatch).
 */
export interface TrainingBatch {
  sequences: TrainingSequence[];
  /** [S] trajectoryId of each sequence (the same numbers as `sequences[i].trajectoryId`). */
  trajectoryIds: number[];
  responsesPerPrompt: number;
  /** Number of trajectories (groups x responsesPerPrompt). */
  trajectories: number;
}

/**
 * Turns accepted groups (each `responsesPerPrompt` trajectories of one prompt, in order) into
 * the training layout: trajectory ids are renumbered 0..N-1 so group k holds ids
 * k*G .. k*G+G-1, as grouped estimators (GRPO, RLOO) expect. Every group must hold exactly
 * `responsesPerPrompt` trajectories.
 */
export function toTrainingBatch(
  groups: readonly (readonly Trajectory[])[],
  responsesPerPrompt: number,
): TrainingBatch {
  for (const [k, group] of groups.entries()) {
    if (group.length !== responsesPerPrompt) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `group ${k} has ${group.length} trajectories, expected responsesPerPrompt = ${responsesPerPrompt}`,
      );
    }
  }
  const sequences: TrainingSequence[] = [];
  let trajectoryId = 0;
  for (const [promptId, group] of groups.entries()) {
    for (const trajectory of group) {
      for (const s of trajectory.sequences) {
        const n = s.tokenIds.length - 1;
        if (n < 1) continue; // a lone token predicts nothing
        sequences.push({
          states: s.tokenIds.slice(0, -1),
          actions: s.tokenIds.slice(1),
          actionMask: s.actionMask.slice(1),
          eosMask: Array.from({ length: n }, (_, i) => (i === n - 1 ? 1 : 0)),
          positionIds: Array.from({ length: n }, (_, i) => i),
          llmLogps: s.logprobs.slice(1),
          rewards: s.rewards.slice(1),
          trajectoryId,
          promptId,
        });
      }
      trajectoryId += 1;
    }
  }
  return {
    sequences,
    trajectoryIds: sequences.map((s) => s.trajectoryId),
    responsesPerPrompt,
    trajectories: trajectoryId,
  };
}
