import * as tf from '@tensorflow/tfjs-core';

/**
 * Whether the active backend keeps tensors in device memory with no synchronous read
 * (webgpu, webgl): code that would read a tensor in the middle of a pass must then read it
 * before or after the pass, asynchronously.
 */
export function readsOnDevice(): boolean {
  const name = tf.getBackend();
  return name === 'webgpu' || name === 'webgl';
}

/** A float32 copy of a tensor's values (synchronous; tfjs CPU/WASM backends). */
export function valuesOf(x: tf.Tensor): Float32Array {
  const v = x.dataSync();
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
