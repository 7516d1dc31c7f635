import { type Tensor, tensor } from '@tensorflow/tfjs-core';
import {
  FLOAT32_EPS,
  actionTimelines,
  broadcastTrajectories,
  groupCount,
  meanStd,
  readTokens,
  trajectoryTotals,
} from './internal/trajectories.js';
import type { TrajectoryBatch } from './layout.js';

/** Options of `computeReinforceAdvantages` (RL2 `adv.*`). */
export interface ReinforceOptions {
  /** Responses per prompt G; trajectories k..k+G-1 share a prompt (default 1). */
  readonly responsesPerPrompt?: number;
  /** Use the batch mean (and std) instead of the group's (RL2 `adv.global_norm`, default false). */
  readonly globalBaseline?: boolean;
  /** Divide by std + eps (GRPO; RL2 `adv.norm_var`, default false = Dr. GRPO). */
  readonly normVar?: boolean;
}

/**
 * REINFORCE with a baseline, RL2's `adv.estimator=reinforce`. Per trajectory, R = sum of its
 * rewards on action tokens; A = R - mean(group of its prompt) (the batch mean when one
 * response per prompt or `globalBaseline`); with `normVar`, A /= std + eps (unbiased std,
 * float32 eps; std 0 for a single value). A is broadcast to every action token.
 * - `normVar: false` is Dr. GRPO (https://arxiv.org/abs/2503.20783), RL2's default.
 * - `normVar: true` is GRPO (https://arxiv.org/abs/2402.03300).
 * A group whose rewards are all equal gets advantage 0.
 *
 * @returns advantages `[B, T]` float32, 0 off action tokens.
 */
export function computeReinforceAdvantages(
  batch: TrajectoryBatch,
  options: ReinforceOptions = {},
): Tensor {
  const fn = 'computeReinforceAdvantages';
  const g = options.responsesPerPrompt ?? 1;
  const tl = actionTimelines(batch.actionMask, batch.trajectoryIds, fn);
  const r = readTokens(batch.rewards, [tl.rows, tl.cols], 'rewards', fn);
  const totals = trajectoryTotals(r, tl);
  const groups = groupCount(totals.length, g, fn);
  const adv = new Float64Array(totals.length);
  const global = g === 1 || (options.globalBaseline ?? false);
  const slices = global
    ? [totals]
    : Array.from({ length: groups }, (_, k) => totals.subarray(k * g, (k + 1) * g));
  let offset = 0;
  for (const group of slices) {
    const { mean, std } = meanStd(group);
    group.forEach((x, j) => {
      adv[offset + j] = options.normVar ? (x - mean) / (std + FLOAT32_EPS) : x - mean;
    });
    offset += group.length;
  }
  return tensor(Float32Array.from(broadcastTrajectories(adv, tl)), [tl.rows, tl.cols]);
}
