// The engine's gradients (its fixes for tfjs-core and the native kernels under the stock
// gradient functions) against PyTorch 1.13 in float64: fixtures/engine-grads.json, written by
// scripts/engine-make-fixtures.py.
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from './init-engine.js';
import { softmaxCrossEntropy } from './softmax-cross-entropy.js';
import { closeness, runOn, type TensorSpec } from './testing/backend-check.js';
import { nativeForTests } from './testing/native-for-tests.js';

interface FixtureTensor {
  shape: number[];
  values: number[];
  dtype?: 'float32' | 'int32';
}
interface Fixture {
  name: string;
  op: string;
  kwargs: { transposeA?: boolean; transposeB?: boolean };
  inputs: Record<string, FixtureTensor>;
  w: FixtureTensor;
  out: FixtureTensor;
  grads: Record<string, number[]>;
}

const fixtures = JSON.parse(
  readFileSync(new URL('./fixtures/engine-grads.json', import.meta.url), 'utf8'),
).cases as Fixture[];

function spec(t: FixtureTensor): TensorSpec {
  return t.dtype === 'int32'
    ? { shape: t.shape, values: Int32Array.from(t.values), dtype: 'int32' }
    : { shape: t.shape, values: Float32Array.from(t.values) };
}

function opOf(f: Fixture): (...xs: tf.Tensor[]) => tf.Tensor {
  const { transposeA = false, transposeB = false } = f.kwargs;
  switch (f.op) {
    case 'matMul':
      return (a, b) => tf.matMul(a, b, transposeA, transposeB);
    case 'maximum':
      return tf.maximum;
    case 'minimum':
      return tf.minimum;
    case 'squaredDifference':
      return tf.squaredDifference;
    case 'softmax':
      return (x) => tf.softmax(x);
    case 'logSumExp':
      return (x) => tf.logSumExp(x, -1);
    case 'gather':
      return (x, i) => tf.gather(x, i);
    case 'softmaxCrossEntropy':
      return (x, labels) => softmaxCrossEntropy(x, labels);
    default:
      throw new Error(`fixtures/engine-grads.json: unknown op "${f.op}" in case "${f.name}"`);
  }
}

const backends = ['cpu', ...(nativeForTests().ok ? ['native'] : [])];

describe.each(backends)('gradients on %s against PyTorch', (backend) => {
  beforeAll(async () => {
    await initEngine({
      backend: backend as 'cpu' | 'native',
      threads: 1,
      logger: () => {},
      env: {},
    });
  });

  it.each(fixtures.map((f) => [f.name, f] as const))('%s', async (_name, f) => {
    const names = Object.keys(f.inputs);
    const floatIdx = names.map((n, i) => [n, i] as const).filter(([n]) => f.grads[n] !== undefined);
    const op = opOf(f);
    const r = await runOn(backend, [...names.map((n) => spec(f.inputs[n])), spec(f.w)], (...xs) => {
      const w = xs[xs.length - 1];
      const args = xs.slice(0, -1);
      const loss = (...fs: tf.Tensor[]) => {
        const full = args.map((a, i) => fs[floatIdx.findIndex(([, j]) => j === i)] ?? a);
        return tf.sum(tf.mul(op(...full), w));
      };
      return [op(...args), ...tf.grads(loss)(floatIdx.map(([, i]) => args[i]))];
    });
    expect(r.shapes[0]).toEqual(f.out.shape);
    expect(closeness(r.values[0], f.out.values, 1e-5, 1e-4)).toBeLessThanOrEqual(1);
    floatIdx.forEach(([n], k) => {
      expect(r.shapes[k + 1], `shape of d/d${n}`).toEqual(f.inputs[n].shape);
      expect(closeness(r.values[k + 1], f.grads[n], 1e-5, 1e-4), `d/d${n}`).toBeLessThanOrEqual(1);
    });
  });
});
