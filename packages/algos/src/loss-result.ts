import type { Scalar } from '@tensorflow/tfjs-core';

/**
 * What every loss returns. `loss` is this batch's contribution to the global loss (a scalar
 * to differentiate; dispose it when done). `metrics` are scalar tensors normalised by the same
 * global totals, so summing them over micro-batches and ranks gives the global value. They stay
 * on the backend's device (a GPU step is never stalled by a read): the caller owns them, and
 * reads them, once per step, with `readMetrics` (one asynchronous transfer, then disposed).
 */
export interface LossResult<M extends string = string> {
  readonly loss: Scalar;
  readonly metrics: Readonly<Partial<Record<M, Scalar>>>;
}
