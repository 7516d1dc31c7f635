import { type Tensor, tensor } from '@tensorflow/tfjs-core';
import { expectNumber } from './internal/check.js';
import { actionTimelines, readTokens, whitenInPlace } from './internal/trajectories.js';
import type { TrajectoryBatch } from './layout.js';

/** Options of `computeGae` (RL2 `adv.gamma`, `adv.lamda`). */
export interface GaeOptions {
  /** Discount gamma in [0, 1] (default 1). */
  readonly gamma?: number;
  /** GAE lambda in [0, 1] (default 1). */
  readonly lambda?: number;
  /** Whiten advantages over all action tokens of the batch (default true, as RL2). */
  readonly whiten?: boolean;
}

/**
 * Generalised Advantage Estimation (Schulman et al. 2015, https://arxiv.org/abs/1506.02438)
 * on each trajectory's action-only timeline (all turns joined, observation tokens skipped):
 *   delta_t = r_t + gamma * V_{t+1} - V_t      (V after the last action is 0)
 *   A_t     = delta_t + gamma * lambda * A_{t+1}
 *   returns = A + V   (before whitening)
 * then A is whitened over all action tokens of the batch: (A - mean) / (std + eps), unbiased
 * std, eps = float32 eps (std is 0, not NaN, for a single action token).
 * Computed in float64; not differentiable (advantages are constants for the loss).
 *
 * @param batch rewards `[B, T]`, actionMask `[B, T]`, trajectoryIds; `values` `[B, T]` are the
 *   critic's old values.
 * @returns advantages `[B, T]` and returns `[B, T]` (0 off action tokens), float32.
 */
export function computeGae(
  batch: TrajectoryBatch & { readonly values: Tensor },
  options: GaeOptions = {},
): { advantages: Tensor; returns: Tensor } {
  const fn = 'computeGae';
  const gamma = options.gamma ?? 1;
  const lambda = options.lambda ?? 1;
  expectNumber(gamma, (v) => v >= 0 && v <= 1, 'gamma', fn, 'in [0, 1]');
  expectNumber(lambda, (v) => v >= 0 && v <= 1, 'lambda', fn, 'in [0, 1]');
  const tl = actionTimelines(batch.actionMask, batch.trajectoryIds, fn);
  const shape = [tl.rows, tl.cols];
  const r = readTokens(batch.rewards, shape, 'rewards', fn);
  const v = readTokens(batch.values, shape, 'values', fn);
  const adv = new Float64Array(tl.rows * tl.cols);
  const ret = new Float64Array(tl.rows * tl.cols);
  for (const idx of tl.actions) {
    let next = 0;
    let gae = 0;
    for (let k = idx.length - 1; k >= 0; k--) {
      const i = idx[k]!;
      const delta = r[i]! + gamma * next - v[i]!;
      gae = delta + gamma * lambda * gae;
      adv[i] = gae;
      ret[i] = gae + v[i]!;
      next = v[i]!;
    }
  }
  if (options.whiten ?? true) whitenInPlace(adv, tl);
  return {
    advantages: tensor(Float32Array.from(adv), shape),
    returns: tensor(Float32Array.from(ret), shape),
  };
}
