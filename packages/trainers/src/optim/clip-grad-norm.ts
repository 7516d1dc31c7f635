import { weightedSumOfSquares } from '@rl2/engine';
import type { FsdpNormOptions } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';

/** Gradients keyed by parameter name. */
export type NamedGrads = Record<string, tf.Tensor>;

/**
 * The global L2 norm sqrt(sum_i ||g_i||^2) of gradients every rank holds whole. Under tensor
 * parallelism `options` weighs each tensor's squares and adds them over the tp group.
 */
export async function gradNorm(grads: NamedGrads, options: FsdpNormOptions = {}): Promise<number> {
  const { weightOf, across } = options;
  // one gradient at a time, no squared copy of any (on the CPU); one read of them all on a GPU
  const names = Object.keys(grads);
  const weights = weightOf ? names.map((n) => weightOf(n)) : undefined;
  let sq = await weightedSumOfSquares(
    names.map((n) => grads[n] as tf.Tensor),
    weights,
  );
  if (across && across.size > 1) sq = across.allReduce(Float32Array.of(sq), 'sum')[0] as number;
  return Math.sqrt(sq);
}

/** The factor torch.nn.utils.clip_grad_norm_ scales gradients by: min(1, maxNorm / (norm + 1e-6)); 1 without clipping. */
export function clipCoefficient(norm: number, maxNorm: number | null): number {
  return maxNorm === null ? 1 : Math.min(1, maxNorm / (norm + 1e-6));
}

/**
 * Clips by the global L2 norm over all gradients, like torch.nn.utils.clip_grad_norm_:
 *   norm = sqrt(sum_i ||g_i||^2);  g_i *= min(1, maxNorm / (norm + 1e-6)).
 * Returns the pre-clip norm and new gradient tensors (inputs are not disposed).
 * With data parallelism the norm must be that of the full gradient, not of a shard: `normOf`
 * computes it for sharded layouts (tp shards, ZeRO-3 flat shards).
 */
export async function clipGradNorm(
  grads: NamedGrads,
  maxNorm: number | null,
  normOf: (grads: NamedGrads) => number | Promise<number> = gradNorm,
): Promise<{ norm: number; grads: NamedGrads }> {
  const norm = await normOf(grads);
  const coef = clipCoefficient(norm, maxNorm);
  const out: NamedGrads = {};
  for (const n of Object.keys(grads)) out[n] = tf.tidy(() => tf.mul(grads[n], coef));
  return { norm, grads: out };
}
