import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs-core/dist/register_all_gradients';
import * as tf from '@tensorflow/tfjs-core';
import { expect } from 'vitest';

/** Absolute and relative tolerance for float32 results against float64 references. */
export const TOL = 1e-6;

/** Sets the cpu backend (call in beforeAll). */
export async function useCpu(): Promise<void> {
  await tf.setBackend('cpu');
  await tf.ready();
}

/** Reads packages/algos/fixtures/<name> (written by scripts/make_fixtures.py). */
export function fixture<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', name), 'utf8')) as T;
}

/** |actual - expected| <= tol * max(1, |expected|) elementwise, with a readable failure. */
export function expectClose(
  actual: ArrayLike<number> | number,
  expected: unknown,
  tol = TOL,
  what = 'value',
): void {
  const a = typeof actual === 'number' ? [actual] : Array.from(actual);
  const e = (
    typeof expected === 'number' ? [expected] : (expected as unknown[]).flat(Infinity)
  ) as number[];
  expect(a.length, `${what}: length`).toBe(e.length);
  for (let i = 0; i < a.length; i++) {
    const err = Math.abs(a[i]! - e[i]!);
    if (!(err <= tol * Math.max(1, Math.abs(e[i]!)))) {
      expect.fail(
        `${what}[${i}] = ${a[i]} but reference is ${e[i]} (error ${err.toExponential(2)} > ${tol})`,
      );
    }
  }
}

/** Reads a tensor and disposes it. */
export function take(t: tf.Tensor): Float32Array {
  const out = t.dataSync() as Float32Array;
  t.dispose();
  return Float32Array.from(out);
}

/** Builds the tensors of one fixture layout: float32 fields, int32 sequenceIds. */
export function tensorsOf(layout: Record<string, number[][]>): Record<string, tf.Tensor> {
  const out: Record<string, tf.Tensor> = {};
  for (const [k, v] of Object.entries(layout)) {
    out[k] =
      k === 'sequenceIds' || k === 'trajectoryIds'
        ? tf.tensor(v, undefined, 'int32')
        : tf.tensor(v);
  }
  return out;
}

/** A loss's metric tensors as numbers, each disposed (what `readMetrics` does, synchronously on cpu). */
export function metricValues(
  m: Readonly<Record<string, tf.Scalar | undefined>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, t] of Object.entries(m)) if (t) out[k] = take(t)[0]!;
  return out;
}

/** Disposes every tensor of a record. */
export function disposeAll(r: Record<string, tf.Tensor>): void {
  for (const t of Object.values(r)) t.dispose();
}

/** Runs `f` and asserts it leaves no tensor behind. */
export function expectNoLeak(f: () => void): void {
  const before = tf.memory().numTensors;
  f();
  expect(tf.memory().numTensors, 'tensors leaked').toBe(before);
}
