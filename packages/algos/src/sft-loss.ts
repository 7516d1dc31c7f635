import { type Tensor, clone, neg, tidy } from '@tensorflow/tfjs-core';
import { type AggregationOptions, aggregateLoss } from './aggregate-loss.js';
import { expectShape } from './internal/check.js';
import type { TokenLayout } from './layout.js';
import type { LossResult } from './loss-result.js';

/**
 * Supervised fine-tuning loss: the aggregated negative log-likelihood of the action tokens,
 * RL2's aggregate(-logp, action_mask, avg_level). `logps` `[B, T]` (differentiated).
 * Metric: nll, the loss value (a scalar of its own: the caller disposes the loss and the metric).
 */
export function sftLoss(
  inputs: TokenLayout & { readonly logps: Tensor },
  options: { readonly aggregation?: AggregationOptions } = {},
): LossResult<'nll'> {
  expectShape(inputs.logps, inputs.actionMask.shape, 'logps', 'sftLoss');
  const loss = tidy(() => aggregateLoss(neg(inputs.logps), inputs, options.aggregation));
  return { loss, metrics: { nll: clone(loss) } };
}
