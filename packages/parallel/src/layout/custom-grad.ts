import { readValuesNow } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';

/**
 * Whether the active backend keeps tensors in device memory (webgpu, webgl): a read in the
 * middle of a pass then waits for the device (`valuesOf`), so code that can read before or
 * after the pass, asynchronously, does (FSDP's gathers).
 */
export function readsOnDevice(): boolean {
  const name = tf.getBackend();
  return name === 'webgpu' || name === 'webgl';
}

/**
 * A float32 copy of a tensor's values, now: for collectives through host memory inside a pass
 * (on webgpu a read that waits for the device, @rl2/engine `readValuesNow`).
 */
export function valuesOf(x: tf.Tensor): Float32Array {
  const v = readValuesNow(x);
  return v instanceof Float32Array
    ? Float32Array.from(v)
    : Float32Array.from(v as ArrayLike<number>);
}

/** tf.customGrad for a one-input op, typed: `fn` returns the value and the input gradient. */
export function unaryCustomGrad(
  fn: (x: tf.Tensor) => { value: tf.Tensor; gradFunc: (dy: tf.Tensor) => tf.Tensor },
): (x: tf.Tensor) => tf.Tensor {
  const op = tf.customGrad(((x: tf.Tensor) => fn(x)) as unknown as Parameters<
    typeof tf.customGrad
  >[0]);
  return (x) => op(x);
}
