import {
  type Scalar,
  type Tensor,
  add,
  cast,
  less,
  maximum,
  minimum,
  mul,
  square,
  sub,
  sum,
  tidy,
} from '@tensorflow/tfjs-core';
import { type AggregationOptions, aggregationWeights } from './aggregate-loss.js';
import { expectNumber, expectShape } from './internal/check.js';
import { stopGradient } from './internal/stop-gradient.js';
import type { TokenLayout } from './layout.js';
import type { LossResult } from './loss-result.js';

/** Per-token inputs of `criticValueLoss`, all `[B, T]`. */
export interface CriticValueInputs extends TokenLayout {
  /** [B, T] current value predictions (differentiated). */
  readonly values: Tensor;
  /** [B, T] values at rollout time (the clip centre). */
  readonly oldValues: Tensor;
  /** [B, T] regression targets (GAE returns). */
  readonly returns: Tensor;
}

/** Options of `criticValueLoss` (RL2 `critic.clip`). */
export interface CriticValueOptions {
  /** Value clip c (default 0.5). */
  readonly clip?: number;
  readonly aggregation?: AggregationOptions;
}

/**
 * Clipped value loss (PPO2 / RL2 critic; https://arxiv.org/abs/2005.12729 discusses it):
 *   l_t = max((V_t - R_t)^2, (clip(V_t, V_old - c, V_old + c) - R_t)^2)   (no 1/2 factor)
 * aggregated like the actor loss. Metrics: clipFraction (share of tokens where the clipped
 * term is larger), valueError = aggregated (V - R)^2.
 */
export function criticValueLoss(
  inputs: CriticValueInputs,
  options: CriticValueOptions = {},
): LossResult<'clipFraction' | 'valueError'> {
  const fn = 'criticValueLoss';
  const shape = inputs.actionMask.shape;
  expectShape(inputs.values, shape, 'values', fn);
  expectShape(inputs.oldValues, shape, 'oldValues', fn);
  expectShape(inputs.returns, shape, 'returns', fn);
  const c = options.clip ?? 0.5;
  expectNumber(c, (v) => v >= 0, 'clip', fn, '>= 0');
  // one set of per-token weights serves the loss and every metric
  const weights = aggregationWeights(inputs, options.aggregation);
  const agg = (x: Tensor) => sum(mul(x, weights)) as Scalar;
  const { loss, metrics } = tidy(() => {
    const { values, oldValues, returns } = inputs;
    // clamp(V, V_old - c, V_old + c); the gradient passes where V_old - c <= V <= V_old + c, as torch.clamp
    const vClipped = minimum(maximum(values, sub(oldValues, c)), add(oldValues, c));
    const mse = square(sub(values, returns));
    const clippedMse = square(sub(vClipped, returns));
    const named = {
      clipFraction: agg(cast(less(mse, clippedMse), 'float32')),
      valueError: agg(stopGradient(mse)),
    };
    return { loss: agg(maximum(mse, clippedMse)), metrics: named };
  });
  weights.dispose();
  return { loss, metrics };
}
