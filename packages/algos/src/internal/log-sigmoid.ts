import { type Tensor, neg, softplus } from '@tensorflow/tfjs-core';

/**
 * log sigmoid(x) = -softplus(-x), numerically stable. tfjs's own `logSigmoid` is a customGrad
 * that reads its input again in the backward pass, which fails ("reading 'backend'") when the
 * input was an intermediate disposed by a tidy; Softplus saves what its gradient needs.
 */
export function logSigmoid(x: Tensor): Tensor {
  return neg(softplus(neg(x)));
}
