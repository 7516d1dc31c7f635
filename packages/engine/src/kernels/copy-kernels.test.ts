import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { randomSpec, runOn } from '../testing/backend-check.js';
import { copySlice } from './copy-kernels.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const hasNative = nativeForTests().ok;

describe('copySlice', () => {
  it('copies a hand-derived box out of a [3, 4] matrix', () => {
    const x = Float32Array.from({ length: 12 }, (_, i) => i);
    const out = new Float32Array(4);
    copySlice(x, [3, 4], [1, 1], [2, 2], out);
    expect(Array.from(out)).toEqual([5, 6, 9, 10]);
  });

  it('copies whole trailing dims as one run and long runs with set()', () => {
    const x = Float32Array.from({ length: 2 * 3 * 80 }, (_, i) => i);
    const out = new Float32Array(2 * 80);
    copySlice(x, [2, 3, 80], [0, 2, 0], [2, 1, 80], out);
    expect(out[0]).toBe(160);
    expect(out[80]).toBe(400);
    expect(out[159]).toBe(479);
  });
});

describe.skipIf(!hasNative)('Slice / SplitV / Concat on the native backend', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  const exact = async (
    inputs: ReturnType<typeof randomSpec>[],
    f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
  ) => {
    const native = await runOn('native', inputs, f);
    const cpu = await runOn('cpu', inputs, f);
    expect(native.shapes).toEqual(cpu.shapes);
    native.values.forEach((v, i) => {
      expect(Array.from(v)).toEqual(Array.from(cpu.values[i]));
    });
  };

  it.each([
    [
      [5, 6],
      [1, 2],
      [3, -1],
    ],
    [
      [2, 3, 4, 70],
      [0, 1, 0, 3],
      [2, 2, 4, 65],
    ],
    [
      [2, 3, 4],
      [1, 0, 0],
      [1, 3, 4],
    ],
    [[7], [2], [0]],
  ])(
    'slice %j at %j size %j: forward and gradient (Pad) match stock exactly',
    async (shape, begin, size) => {
      await exact([randomSpec(shape, 71)], (x) => [
        tf.slice(x, begin, size),
        tf.grad((t: tf.Tensor) => tf.sum(tf.square(tf.slice(t, begin, size))))(x),
      ]);
    },
  );

  it.each([
    [[2, 4, 6, 64], [32, 32], 3],
    [[4, 6], 3, 1],
    [[6, 5], [1, 2, 3], 0],
  ] as [number[], number | number[], number][])(
    'split %j into %j on axis %i, and concat back, with gradients',
    async (shape, splits, axis) => {
      await exact([randomSpec(shape, 72)], (x) => {
        const parts = tf.split(x, splits, axis);
        const joined = tf.concat([...parts].reverse(), axis);
        const g = tf.grad((t: tf.Tensor) => {
          const ps = tf.split(t, splits, axis);
          return tf.sum(
            tf.mul(tf.concat([tf.neg(ps[ps.length - 1]), ...ps.slice(0, -1)], axis), joined),
          );
        })(x);
        return [...parts, joined, g];
      });
    },
  );

  it('concat keeps int32 and bool dtypes', async () => {
    await tf.setBackend('native');
    const i = tf.concat(
      [tf.tensor2d([1, 2], [1, 2], 'int32'), tf.tensor2d([3, 4], [1, 2], 'int32')],
      1,
    );
    expect(i.dtype).toBe('int32');
    expect(Array.from(i.dataSync())).toEqual([1, 2, 3, 4]);
    const b = tf.concat([tf.tensor1d([1, 0], 'bool'), tf.tensor1d([1], 'bool')]);
    expect(b.dtype).toBe('bool');
    expect(Array.from(b.dataSync())).toEqual([1, 0, 1]);
  });
});
