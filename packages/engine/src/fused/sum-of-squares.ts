// The squared L2 norm of tensors (gradients, for clipping by the global norm) without a squared
// copy of any: read in place in double precision on cpu-style backends (over the threads on
// `native`), one WGSL reduction per tensor into a small device buffer on webgpu
// (webgpu/wgsl-sums-of-squares.ts), read back once.
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { readsSynchronously } from '../device-reads.js';
import { activeNativeAddon } from '../native-backend.js';
import { hasKernel } from './fused-kernel.js';

/** ||t_i||^2 of each of k float32 tensors (inputs keyed in order) into one [k] tensor (webgpu). */
export const SUMS_OF_SQUARES = 'Rl2SumsOfSquares';

/**
 * sum(t^2) in double precision (a gradient's squared norm) read straight from `t`'s float32
 * buffer on a cpu-style backend (over the threads in the addon on `native`), without the temporary
 * `tf.square(t)` (a whole gradient's size);
 * the composite ops elsewhere.
 */
export function sumOfSquares(t: tf.Tensor): number {
  const values = (tf.backend() as unknown as Partial<MathBackendCPU>).data?.get(t.dataId)?.values;
  if (t.dtype !== 'float32' || !(values instanceof Float32Array))
    return tf.tidy(() => tf.sum(tf.square(t)).dataSync()[0] as number);
  const addon = activeNativeAddon();
  if (addon) return addon.sumSquares(values);
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i]! * values[i]!;
  return s;
}

/**
 * sum_i w_i ||t_i||^2 over many tensors (a gradient norm), read once. On cpu-style backends each
 * tensor's squares are summed in place in double precision (`sumOfSquares`); elsewhere the sums
 * stay on the device, one scalar per tensor (a WGSL reduction each on webgpu, with no squared
 * copy), and come back in one asynchronous read.
 */
export async function weightedSumOfSquares(
  tensors: readonly tf.Tensor[],
  weights?: readonly number[],
): Promise<number> {
  const weightOf = (i: number) => (weights ? weights[i]! : 1);
  if (readsSynchronously())
    return tensors.reduce((s, t, i) => s + sumOfSquares(t) * weightOf(i), 0);
  if (tensors.length === 0) return 0;
  const parts = tf.tidy(() => sumsOfSquares(tensors));
  const values = await parts.data();
  parts.dispose();
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i]! * weightOf(i);
  return s;
}

/** ||t_i||^2 [k] on the device: the fused kernel where the backend has one (webgpu), else square and sum. */
function sumsOfSquares(tensors: readonly tf.Tensor[]): tf.Tensor {
  if (!hasKernel(SUMS_OF_SQUARES) || tensors.some((t) => t.dtype !== 'float32'))
    return tf.stack(tensors.map((t) => tf.sum(tf.square(t))));
  const inputs = Object.fromEntries(tensors.map((t, i) => [`t${i}`, t]));
  return tf.engine().runKernel(SUMS_OF_SQUARES, inputs) as tf.Tensor;
}
