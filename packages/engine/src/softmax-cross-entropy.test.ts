import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from './errors.js';
import { initEngine } from './init-engine.js';
import { softmaxCrossEntropy } from './softmax-cross-entropy.js';
import {
  closeness,
  numericGrad,
  randomSpec,
  runOn,
  type TensorSpec,
} from './testing/backend-check.js';
import { nativeForTests } from './testing/native-for-tests.js';

const hasNative = nativeForTests().ok;
const labels: TensorSpec = {
  shape: [2, 3],
  values: Int32Array.of(4, 0, -1, 2, 9, 1),
  dtype: 'int32',
};

describe('softmaxCrossEntropy', () => {
  beforeAll(async () => {
    await initEngine({
      backend: hasNative ? 'native' : 'cpu',
      threads: 1,
      logger: () => {},
      env: {},
    });
  });

  it('gives log(V) for uniform logits and 0 for masked rows (hand-derived)', async () => {
    const r = await runOn(
      tf.getBackend(),
      [
        { shape: [2, 4], values: new Float32Array(8) },
        { shape: [2], values: Int32Array.of(3, -1), dtype: 'int32' },
      ],
      softmaxCrossEntropy,
    );
    expect(r.values[0][0]).toBeCloseTo(Math.log(4), 6);
    expect(r.values[0][1]).toBe(0);
  });

  it('rejects labels that are not int32 of the leading shape, naming both shapes', () => {
    expect(() => softmaxCrossEntropy(tf.zeros([2, 4]), tf.zeros([3], 'int32'))).toThrow(
      EngineError,
    );
    expect(() =>
      softmaxCrossEntropy(tf.zeros([2, 4]), tf.zeros([2], 'int32').cast('float32')),
    ).toThrow(/labels must be int32 of shape \[2\]/);
  });

  it.skipIf(!hasNative)(
    'fused native kernel matches the composite cpu path, forward and backward, on [2, 3, V] logits',
    async () => {
      const inputs = [randomSpec([2, 3, 10], 81, 4), labels, randomSpec([2, 3], 82)];
      const loss = (x: tf.Tensor, l: tf.Tensor, w: tf.Tensor) =>
        tf.sum(tf.mul(softmaxCrossEntropy(x, l), w)) as tf.Scalar;
      const f = (x: tf.Tensor, l: tf.Tensor, w: tf.Tensor) => [
        softmaxCrossEntropy(x, l),
        tf.grad((t: tf.Tensor) => loss(t, l, w))(x),
      ];
      const native = await runOn('native', inputs, f);
      const cpu = await runOn('cpu', inputs, f);
      expect(native.shapes).toEqual([
        [2, 3],
        [2, 3, 10],
      ]);
      native.values.forEach((v, i) => {
        expect(closeness(v, cpu.values[i])).toBeLessThanOrEqual(1);
      });
      await tf.setBackend('native');
      expect(
        closeness(native.values[1], numericGrad(inputs, 0, loss), 2e-3, 1e-2),
      ).toBeLessThanOrEqual(1);
    },
  );

  it.skipIf(!hasNative)(
    'native kernel rejects a label at or above the vocabulary size',
    async () => {
      await tf.setBackend('native');
      expect(() => softmaxCrossEntropy(tf.zeros([2, 4]), tf.tensor1d([1, 4], 'int32'))).toThrow(
        /label 4 at row 1 is not below the vocabulary size 4/,
      );
    },
  );
});
