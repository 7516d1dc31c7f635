// Test support for the WGSL kernels: run one tfjs computation on the native backend and on
// webgpu, compare every output at the models' parity measure, and name the WGSL programs the
// webgpu run dispatched (so a test fails when the composite ops did the work instead).
import * as tf from '@tensorflow/tfjs-core';
import { initEngine } from '../init-engine.js';
import { randomValues } from './backend-check.js';

/** How far one webgpu output is from native's: `scaled` <= 1 is within parity. */
export interface ParityError {
  /** Largest |webgpu - native| over 1e-4 max|native| + 1e-6 (sums that cancel keep float32's absolute error). */
  scaled: number;
  /** The element where it is largest, and both values there. */
  at: number;
  got: number;
  want: number;
}

/** Each output's error, and the shader keys of the WGSL programs webgpu ran. */
export interface Parity {
  errors: Record<string, ParityError>;
  shaderKeys: string[];
}

type Outputs = Record<string, tf.Tensor>;

interface ProgramRunner {
  runWebGPUProgram?: (p: { shaderKey: string }, ...rest: unknown[]) => unknown;
}

/**
 * Records the shader key of every WGSL program the active backend runs until `stop()` (none
 * off webgpu): a test's proof that a fused WGSL kernel, not the composite ops, did the work.
 */
export function recordShaderKeys(): { keys: string[]; stop(): void } {
  const keys: string[] = [];
  const be = tf.backend() as unknown as ProgramRunner;
  const original = be.runWebGPUProgram;
  if (original)
    be.runWebGPUProgram = (p, ...rest) => {
      keys.push(p.shaderKey);
      return original.call(be, p, ...rest);
    };
  return {
    keys,
    stop: () => {
      if (original) be.runWebGPUProgram = original;
    },
  };
}

/**
 * Starts `backend` (one thread, quiet), runs `compute` in a tidy (the inputs it makes go with
 * it), reads every output back asynchronously and, on webgpu, records each program's shader key.
 */
export async function runRecorded(
  backend: 'native' | 'webgpu',
  compute: () => Outputs,
): Promise<{ values: Record<string, Float32Array>; shaderKeys: string[] }> {
  await initEngine({ backend, threads: 1, env: {}, logger: () => {} });
  const recording = recordShaderKeys();
  try {
    const outs = tf.tidy(compute);
    const values: Record<string, Float32Array> = {};
    for (const [name, t] of Object.entries(outs)) values[name] = Float32Array.from(await t.data());
    tf.dispose(Object.values(outs));
    return { values, shaderKeys: recording.keys };
  } finally {
    recording.stop();
  }
}

/**
 * `op(...xs)` and the gradients of sum(op(...xs) * c) with respect to each of `xs`, c a fixed
 * pseudo-random weight of the output's shape (the backward at an arbitrary dy). `op` returns
 * undefined where its fused kernel is missing: that throws, naming the backend.
 */
export function valueAndGrads(
  op: (...xs: tf.Tensor[]) => tf.Tensor | undefined,
  xs: tf.Tensor[],
): { y: tf.Tensor; grads: tf.Tensor[] } {
  const run = (...args: tf.Tensor[]) => {
    const y = op(...args);
    if (!y) throw new Error(`the fused op did not run on backend ${tf.getBackend()}`);
    return y;
  };
  const y = run(...xs);
  const c = tf.tensor(randomValues(y.size, 7), y.shape);
  return { y, grads: tf.grads((...args: tf.Tensor[]) => tf.sum(tf.mul(run(...args), c)))(xs) };
}

/** `compute` on native, then on webgpu; each output's error against native's. */
export async function webgpuAgainstNative(compute: () => Outputs): Promise<Parity> {
  const want = await runRecorded('native', compute);
  const got = await runRecorded('webgpu', compute);
  const errors: Record<string, ParityError> = {};
  for (const [name, w] of Object.entries(want.values))
    errors[name] = parityError(got.values[name] ?? new Float32Array(0), w);
  return { errors, shaderKeys: got.shaderKeys };
}

/** The error of `got` against `want` (Infinity for a length that differs). */
export function parityError(got: Float32Array, want: Float32Array): ParityError {
  if (got.length !== want.length)
    return { scaled: Number.POSITIVE_INFINITY, at: -1, got: NaN, want: NaN };
  let scale = 0;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  const worst: ParityError = { scaled: 0, at: 0, got: got[0] ?? 0, want: want[0] ?? 0 };
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!) / (1e-4 * scale + 1e-6);
    if (!(e <= worst.scaled))
      Object.assign(worst, {
        scaled: Number.isNaN(e) ? Infinity : e,
        at: i,
        got: got[i],
        want: want[i],
      });
  }
  return worst;
}

/** One line per output over parity, for a test's failure message ('' when all are within). */
export function parityFailures(errors: Record<string, ParityError>): string {
  return Object.entries(errors)
    .filter(([, e]) => !(e.scaled <= 1))
    .map(
      ([name, e]) =>
        `${name}[${e.at}]: ${e.got} vs native ${e.want} (${e.scaled.toFixed(2)}x the bound)`,
    )
    .join('; ');
}
