import { type Tensor, tensor } from '@tensorflow/tfjs-core';
import { actionTimelines, readTokens, whitenInPlace } from './internal/trajectories.js';

/**
 * Whitens per-token advantages `[B, T]` over all action tokens (actionMask `[B, T]` == 1):
 * (A - mean) / (std + eps), unbiased std, eps = float32 eps; 0 off action tokens.
 * The same normalisation `computeGae` applies (RL2, and PPO implementations since
 * https://arxiv.org/abs/2005.12729). Computed in float64, returns float32.
 */
export function whitenAdvantages(advantages: Tensor, actionMask: Tensor): Tensor {
  const tl = actionTimelines(actionMask, undefined, 'whitenAdvantages');
  const a = readTokens(advantages, [tl.rows, tl.cols], 'advantages', 'whitenAdvantages');
  whitenInPlace(a, tl);
  return tensor(Float32Array.from(a), [tl.rows, tl.cols]);
}
