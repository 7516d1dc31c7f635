import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import {
  closeness,
  numericGrad,
  randomSpec,
  runOn,
  type TensorSpec,
} from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const hasNative = nativeForTests().ok;

describe.skipIf(!hasNative)('native transpose, gather and segment sum', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  it.each([
    [
      [3, 4],
      [1, 0],
    ],
    [
      [2, 3, 4, 5],
      [0, 2, 1, 3],
    ],
    [
      [2, 3, 4],
      [2, 0, 1],
    ],
    [[5], [0]],
  ])('transpose %j by %j: forward and gradient match stock', async (shape, perm) => {
    const inputs = [
      randomSpec(shape, 51),
      randomSpec(
        perm.map((p) => shape[p]),
        52,
      ),
    ];
    const f = (x: tf.Tensor, w: tf.Tensor) => [
      tf.transpose(x, perm),
      tf.grad((t: tf.Tensor) => tf.sum(tf.mul(tf.transpose(t, perm), w)))(x),
    ];
    const native = await runOn('native', inputs, f);
    const cpu = await runOn('cpu', inputs, f);
    expect(native.shapes).toEqual(cpu.shapes);
    native.values.forEach((v, i) => {
      expect(Array.from(v)).toEqual(Array.from(cpu.values[i]));
    }); // a permutation is exact
  });

  it('transposes int32 tensors', async () => {
    await tf.setBackend('native');
    const y = tf.transpose(tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3], 'int32'));
    expect(y.dtype).toBe('int32');
    expect(Array.from(y.dataSync())).toEqual([1, 4, 2, 5, 3, 6]);
  });

  const ids: TensorSpec = { shape: [2, 3], values: Int32Array.of(4, 0, 4, 2, 1, 4) };
  it.each([0, 1])(
    'gather on axis %i: forward matches stock, gradient (UnsortedSegmentSum) matches numeric',
    async (axis) => {
      const table = randomSpec(axis === 0 ? [5, 3] : [3, 5], 61);
      const outShape = axis === 0 ? [2, 3, 3] : [3, 2, 3];
      const inputs = [table, ids, randomSpec(outShape, 62)];
      const loss = (x: tf.Tensor, i: tf.Tensor, w: tf.Tensor) =>
        tf.sum(tf.mul(tf.gather(x, i, axis), w)) as tf.Scalar;
      const f = (x: tf.Tensor, i: tf.Tensor, w: tf.Tensor) => [
        tf.gather(x, i, axis),
        tf.grad((t: tf.Tensor) => loss(t, i, w))(x),
      ];
      const native = await runOn('native', inputs, f);
      const cpu = await runOn('cpu', inputs, f);
      expect(native.shapes).toEqual(cpu.shapes);
      native.values.forEach((v, i) => {
        expect(closeness(v, cpu.values[i])).toBeLessThanOrEqual(1);
      });
      await tf.setBackend('native');
      expect(
        closeness(native.values[1], numericGrad(inputs, 0, loss), 2e-3, 1e-2),
      ).toBeLessThanOrEqual(1);
    },
  );

  it('gather rejects an out-of-range index naming it', async () => {
    await tf.setBackend('native');
    expect(() => tf.gather(tf.zeros([3, 2]), tf.tensor1d([0, 3], 'int32'))).toThrow(
      /index 3 at position 1 is not in \[0, 2\]/,
    );
  });

  it('unsortedSegmentSum adds rows by id and drops out-of-range ids (hand-derived)', async () => {
    const inputs: TensorSpec[] = [
      { shape: [4, 2], values: Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8) },
      { shape: [4], values: Int32Array.of(2, 0, 2, 9) },
    ];
    const f = (x: tf.Tensor, s: tf.Tensor) => tf.unsortedSegmentSum(x, s as tf.Tensor1D, 3);
    const native = await runOn('native', inputs, f);
    expect(native.shapes[0]).toEqual([3, 2]);
    expect(Array.from(native.values[0])).toEqual([3, 4, 0, 0, 6, 8]);
    const inRange: TensorSpec[] = [inputs[0], { shape: [4], values: Int32Array.of(2, 0, 2, 1) }];
    const a = await runOn('native', inRange, f);
    const b = await runOn('cpu', inRange, f);
    expect(closeness(a.values[0], b.values[0])).toBeLessThanOrEqual(1);
  });
});
