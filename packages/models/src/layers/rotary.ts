import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { fusedRotary } from '@rl2/engine';

/**
 * RoPE inverse frequencies `theta^(-2i/d)` (Su et al. 2021, https://arxiv.org/abs/2104.09864),
 * with linear or Llama 3 scaling (wavelengths longer than original/low_freq_factor divided by
 * `factor`, shorter than original/high_freq_factor kept, smooth interpolation between), as in
 * HF `_compute_llama3_parameters`. Computed in float64.
 */
export function ropeInverseFrequencies(config: ModelConfig): Float64Array {
  const d = config.headDim;
  const inv = new Float64Array(d / 2);
  for (let i = 0; i < d / 2; i++) inv[i] = 1 / config.ropeTheta ** ((2 * i) / d);
  const s = config.ropeScaling;
  if (s.type === 'linear') return inv.map((f) => f / s.factor);
  if (s.type === 'llama3') {
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    return inv.map((f) => {
      const wavelen = (2 * Math.PI) / f;
      if (wavelen < highWavelen) return f;
      if (wavelen > lowWavelen) return f / s.factor;
      const smooth =
        (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) /
        (s.highFreqFactor - s.lowFreqFactor);
      return ((1 - smooth) * f) / s.factor + smooth * f;
    });
  }
  return inv;
}

/** cos/sin tables [N, 1, d] for the given position ids (HF layout: the half-table repeated twice). */
export function ropeTables(
  positions: ArrayLike<number>,
  invFreq: Float64Array,
): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
  const half = invFreq.length;
  const d = 2 * half;
  const n = positions.length;
  const cos = new Float32Array(n * d);
  const sin = new Float32Array(n * d);
  for (let t = 0; t < n; t++) {
    for (let i = 0; i < half; i++) {
      const a = positions[t]! * invFreq[i]!;
      const c = Math.cos(a);
      const s = Math.sin(a);
      cos[t * d + i] = c;
      cos[t * d + half + i] = c;
      sin[t * d + i] = s;
      sin[t * d + half + i] = s;
    }
  }
  return { cos: tf.tensor3d(cos, [n, 1, d]), sin: tf.tensor3d(sin, [n, 1, d]) };
}

/**
 * The constant R [d, d] with x R = rotate_half(x) = [-x2, x1]. Rotating with a matmul instead of
 * slice + concat keeps the backward a matmul too (the slice gradient is a slow Pad in tfjs).
 */
export function rotateHalfMatrix(d: number): tf.Tensor2D {
  const r = new Float32Array(d * d);
  for (let j = 0; j < d / 2; j++) {
    r[(j + d / 2) * d + j] = -1;
    r[j * d + j + d / 2] = 1;
  }
  return tf.tensor2d(r, [d, d]);
}

/**
 * Applies RoPE to `x` [N, heads, d]: `x * cos + rotate_half(x) * sin`, rotate_half(x) = x R.
 * One fused kernel on the `native` backend.
 */
export function applyRotary(
  x: tf.Tensor3D,
  cos: tf.Tensor3D,
  sin: tf.Tensor3D,
  rotate: tf.Tensor2D,
): tf.Tensor3D {
  const fused = fusedRotary(x, cos, sin);
  if (fused) return fused;
  const [n, h, d] = x.shape;
  const rotated = tf.reshape(tf.matMul(tf.reshape(x, [n * h, d]) as tf.Tensor2D, rotate), [
    n,
    h,
    d,
  ]);
  return tf.add(tf.mul(x, cos), tf.mul(rotated, sin));
}
