import type { FsdpNormOptions } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';

/** Gradients keyed by parameter name. */
export type NamedGrads = Record<string, tf.Tensor>;

/**
 * Clips by the global L2 norm over all gradients, like torch.nn.utils.clip_grad_norm_:
 *   norm = sqrt(sum_i ||g_i||^2);  g_i *= min(1, maxNorm / (norm + 1e-6)).
 * Returns the pre-clip norm and new gradient tensors (inputs are not disposed).
 * With data parallelism `norm` must be computed over the full gradient, not a shard: under
 * tensor parallelism `options` weighs each tensor's squares and adds them over the tp group.
 */
export function clipGradNorm(grads: NamedGrads, maxNorm: number | null, options: FsdpNormOptions = {}): { norm: number; grads: NamedGrads } {
  const names = Object.keys(grads);
  const { weightOf, across } = options;
  let sq = tf.tidy(() => {
    const squares = names.map((n) => tf.mul(tf.sum(tf.square(grads[n])), weightOf ? weightOf(n) : 1));
    return squares.length === 0 ? 0 : tf.addN(squares).dataSync()[0];
  });
  if (across && across.size > 1) sq = across.allReduce(Float32Array.of(sq), 'sum')[0] as number;
  const norm = Math.sqrt(sq);
  const coef = maxNorm === null ? 1 : Math.min(1, maxNorm / (norm + 1e-6));
  const out: NamedGrads = {};
  for (const n of names) out[n] = tf.tidy(() => tf.mul(grads[n], coef));
  return { norm, grads: out };
}
