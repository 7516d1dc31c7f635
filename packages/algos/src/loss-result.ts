import type { Scalar } from '@tensorflow/tfjs-core';

/**
 * What every loss returns. `loss` is this batch's contribution to the global loss (a scalar
 * to differentiate; dispose it when done). `metrics` are plain numbers normalised by the same
 * global totals, so summing them over micro-batches and ranks gives the global value.
 */
export interface LossResult<M extends string = string> {
  readonly loss: Scalar;
  readonly metrics: Readonly<Partial<Record<M, number>>>;
}
