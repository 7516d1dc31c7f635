import * as tf from '@tensorflow/tfjs-core';
import { fusedRmsNorm } from '@rl2/engine';

/**
 * RMSNorm (Zhang & Sennrich 2019, https://arxiv.org/abs/1910.07467) over the last axis:
 * `y = w * x / sqrt(mean(x^2) + eps)`, `x` [..., H], `w` [H]. One fused kernel (forward and
 * backward) on the `native` backend, composite ops elsewhere.
 */
export function rmsNorm<T extends tf.Tensor>(x: T, weight: tf.Tensor, eps: number): T {
  const fused = fusedRmsNorm(x, weight, eps);
  if (fused) return fused as T;
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), weight) as T;
}
