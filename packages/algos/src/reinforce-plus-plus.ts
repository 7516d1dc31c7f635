import { type Tensor, tensor } from '@tensorflow/tfjs-core';
import { expectNumber } from './internal/check.js';
import {
  actionTimelines,
  groupCount,
  meanStd,
  readTokens,
  trajectoryTotals,
  whitenInPlace,
} from './internal/trajectories.js';
import type { TrajectoryBatch } from './layout.js';

/** Options of `computeReinforcePlusPlusAdvantages`. */
export interface ReinforcePlusPlusOptions {
  /** Discount gamma in [0, 1] for the return-to-go (default 1). */
  readonly gamma?: number;
  /**
   * `none` (REINFORCE++) or `group-mean` (REINFORCE++-baseline: subtract the mean total reward
   * of the prompt's group before whitening). Default `none`.
   */
  readonly baseline?: 'none' | 'group-mean';
  /** Responses per prompt for `group-mean` (default 1: the batch mean). */
  readonly responsesPerPrompt?: number;
  /** Whiten over all action tokens of the batch (default true). */
  readonly whiten?: boolean;
}

/**
 * REINFORCE++ (Hu 2025, https://arxiv.org/abs/2501.03262): per-token rewards (fold the KL
 * penalty in first with `klPenalizedRewards`) become the discounted return-to-go on each
 * trajectory's action-only timeline, G_t = sum_{s>=t} gamma^(s-t) r_s; the `group-mean`
 * baseline form subtracts b = mean over the prompt's group of the trajectories' total rewards,
 * A_t = G_t - b; then A is whitened over all action tokens of the batch (global batch
 * normalisation; unbiased std, float32 eps, as `computeGae`).
 * With gamma = 1 and only an outcome reward this equals OpenRLHF's `reinforce_baseline`.
 *
 * @returns advantages `[B, T]` float32, 0 off action tokens.
 */
export function computeReinforcePlusPlusAdvantages(
  batch: TrajectoryBatch,
  options: ReinforcePlusPlusOptions = {},
): Tensor {
  const fn = 'computeReinforcePlusPlusAdvantages';
  const gamma = options.gamma ?? 1;
  expectNumber(gamma, (v) => v >= 0 && v <= 1, 'gamma', fn, 'in [0, 1]');
  const tl = actionTimelines(batch.actionMask, batch.trajectoryIds, fn);
  const r = readTokens(batch.rewards, [tl.rows, tl.cols], 'rewards', fn);
  const baselines = new Float64Array(tl.actions.length);
  if ((options.baseline ?? 'none') === 'group-mean') {
    const totals = trajectoryTotals(r, tl);
    const g0 = options.responsesPerPrompt ?? 1;
    groupCount(totals.length, g0, fn);
    const g = g0 === 1 ? totals.length : g0;
    for (let start = 0; start < totals.length; start += g) {
      baselines.fill(meanStd(totals.subarray(start, start + g)).mean, start, start + g);
    }
  }
  const adv = new Float64Array(tl.rows * tl.cols);
  tl.actions.forEach((idx, k) => {
    let ret = 0;
    for (let j = idx.length - 1; j >= 0; j--) {
      ret = r[idx[j]!]! + gamma * ret;
      adv[idx[j]!] = ret - baselines[k]!;
    }
  });
  if (options.whiten ?? true) whitenInPlace(adv, tl);
  return tensor(Float32Array.from(adv), [tl.rows, tl.cols]);
}
