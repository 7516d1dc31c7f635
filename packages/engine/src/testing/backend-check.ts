// Test support for kernels: run the same tfjs computation on two backends, and central-difference
// gradients to check analytic ones. The engine's tests and `@rl2/engine/testing` use it.
import * as tf from '@tensorflow/tfjs-core';

/** A tensor as plain data, so it can be rebuilt on whichever backend is active. */
export interface TensorSpec {
  shape: number[];
  values: Float32Array | Int32Array;
  dtype?: 'float32' | 'int32';
}

/**
 * Deterministic pseudo-random float32 test inputs in [-scale, scale) (xorshift32; `seed` non-zero).
 * Test inputs only, part of `@rl2/engine/testing`: the engine depends on no other rl2 package, so
 * this does not use @rl2/data's `SeededRng`, the generator of rl2's training and sampling.
 */
export function randomValues(size: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(size);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = ((s / 0x100000000) * 2 - 1) * scale;
  }
  return out;
}

/** A float32 spec filled by `randomValues`. */
export function randomSpec(shape: number[], seed: number, scale = 1): TensorSpec {
  return {
    shape,
    values: randomValues(
      shape.reduce((a, b) => a * b, 1),
      seed,
      scale,
    ),
  };
}

function build(spec: TensorSpec): tf.Tensor {
  return tf.tensor(
    spec.values,
    spec.shape,
    spec.dtype ?? (spec.values instanceof Int32Array ? 'int32' : 'float32'),
  );
}

/** Output of one run: each result tensor's shape and values. */
export interface RunResult {
  shapes: number[][];
  values: Float32Array[];
}

/** Runs `fn` on backend `name` with fresh input tensors; reads every result back. */
export async function runOn(
  name: string,
  inputs: TensorSpec[],
  fn: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
): Promise<RunResult> {
  if (!(await tf.setBackend(name))) throw new Error(`backend ${name} did not start`);
  const instance = tf.backend() as unknown as { firstUse?: boolean };
  if ('firstUse' in instance) instance.firstUse = false; // no 'install tfjs-node' banner in test logs
  const xs = inputs.map(build);
  const out = tf.tidy(() => {
    const r = fn(...xs);
    return Array.isArray(r) ? r : [r];
  });
  // asynchronous reads: a GPU backend (webgpu) has no synchronous one
  const result = {
    shapes: out.map((t) => t.shape),
    values: await Promise.all(out.map(async (t) => Float32Array.from(await t.data()))),
  };
  tf.dispose([...xs, ...out]);
  return result;
}

/** Largest |a - b| / (atol + rtol |b|) over two arrays of the same length (<= 1 means close). */
export function closeness(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  atol = 1e-5,
  rtol = 1e-4,
): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]) / (atol + rtol * Math.abs(b[i]));
    if (!(d <= worst)) worst = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  }
  return worst;
}

/**
 * Central-difference gradient of the scalar `loss(...xs)` with respect to input `which`,
 * computed on the active backend in float32 (keep tensors small and eps ~1e-2).
 */
export function numericGrad(
  inputs: TensorSpec[],
  which: number,
  loss: (...xs: tf.Tensor[]) => tf.Scalar,
  eps = 1e-2,
): Float32Array {
  const base = inputs[which].values as Float32Array;
  const grad = new Float32Array(base.length);
  const evalAt = (values: Float32Array): number =>
    tf.tidy(() => {
      const xs = inputs.map((spec, i) => build(i === which ? { ...spec, values } : spec));
      return loss(...xs).dataSync()[0];
    });
  for (let i = 0; i < base.length; i++) {
    const plus = Float32Array.from(base);
    const minus = Float32Array.from(base);
    plus[i] += eps;
    minus[i] -= eps;
    grad[i] = (evalAt(plus) - evalAt(minus)) / (2 * eps);
  }
  return grad;
}
