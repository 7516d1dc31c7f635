// adamWInPlace: the native in-place pass against the composite update on the stock cpu backend,
// writing over the variables' own buffers, and falling back when a buffer is shared.
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { NATIVE_BACKEND } from '../native-backend.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { writeCount } from '../write-count.js';
import { adamWInPlace } from './fused-adamw.js';

const load = nativeForTests();
const H = { lr: 0.01, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, step: 3 };
const values = (n: number, seed: number) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed));

/** A variable that alone holds its buffer (as the optimizer's moments and loaded parameters do). */
function own(x: number[] | Float32Array): tf.Variable {
  const t = tf.tensor(x, [20, 15]);
  const v = tf.variable(t, false);
  t.dispose();
  return v;
}

function stepOn(backend: string, shareParam: boolean, gradScale = 1, gradValues = values(300, 4)) {
  tf.setBackend(backend);
  const p = own(values(300, 1));
  const m = own(values(300, 2).map((x) => 0.1 * x));
  const v = own(values(300, 3).map((x) => x * x));
  const g = tf.tensor(gradValues, [20, 15]);
  const shared = shareParam ? tf.clone(p) : undefined;
  const before = (tf.backend() as MathBackendCPU).data.get(p.dataId)?.values;
  const writesBefore = writeCount(p);
  adamWInPlace(p, g, m, v, { ...H, gradScale });
  const sameBuffer = (tf.backend() as MathBackendCPU).data.get(p.dataId)?.values === before;
  const out = {
    p: p.dataSync().slice(),
    m: m.dataSync().slice(),
    v: v.dataSync().slice(),
    sameBuffer,
    writes: writeCount(p) - writesBefore,
    shared: shared?.dataSync().slice(),
  };
  tf.dispose([p, m, v, g, ...(shared ? [shared] : [])]);
  return out;
}

describe.skipIf(!load.ok)('adamWInPlace', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  it('matches the composite update and writes over the variables own buffers on native', () => {
    const ref = stepOn('cpu', false);
    const got = stepOn(NATIVE_BACKEND, false);
    expect(ref.sameBuffer).toBe(false);
    expect(got.sameBuffer).toBe(true);
    expect(got.writes).toBe(1); // counted, so copies made from p's values see it changed
    for (const k of ['p', 'm', 'v'] as const) {
      for (let i = 0; i < ref[k].length; i++)
        expect(Math.abs(got[k][i]! - ref[k][i]!)).toBeLessThan(1e-6 * (1 + Math.abs(ref[k][i]!)));
    }
    expect(Math.abs(got.p[0]! - values(1, 1)[0]!)).toBeGreaterThan(1e-4); // it did move
  });

  it('scales the gradient inside the native kernel: the same as stepping on the scaled gradient', () => {
    const scaled = values(300, 4).map((x) => Math.fround(x * 0.25));
    const ref = stepOn('cpu', false, 1, scaled);
    const got = stepOn(NATIVE_BACKEND, false, 0.25);
    const unscaled = stepOn(NATIVE_BACKEND, false);
    expect(got.sameBuffer).toBe(true);
    for (const k of ['p', 'm', 'v'] as const) {
      for (let i = 0; i < ref[k].length; i++)
        expect(Math.abs(got[k][i]! - ref[k][i]!)).toBeLessThan(1e-6 * (1 + Math.abs(ref[k][i]!)));
    }
    expect(Math.abs(got.m[1]! - unscaled.m[1]!)).toBeGreaterThan(1e-3); // the scale did change it
    expect(tf.memory().numTensors).toBe(0);
  });

  it('scales the gradient on the cpu backend too (a scaled copy first)', () => {
    const scaled = values(300, 4).map((x) => Math.fround(x * 0.25));
    const ref = stepOn('cpu', false, 1, scaled);
    const got = stepOn('cpu', false, 0.25);
    for (let i = 0; i < ref.p.length; i++) expect(got.p[i]).toBeCloseTo(ref.p[i]!, 6);
    expect(tf.memory().numTensors).toBe(0);
  });

  it('leaves a tensor that shares the parameter buffer untouched (falls back to new buffers)', () => {
    const got = stepOn(NATIVE_BACKEND, true);
    expect(got.sameBuffer).toBe(false);
    expect(got.writes).toBe(0); // a new dataId: nothing to count
    expect(Array.from(got.shared!)).toEqual(Array.from(values(300, 1)));
    expect(tf.memory().numTensors).toBe(0);
  });
});
