import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { closeness, numericGrad, randomSpec, runOn } from '../testing/backend-check.js';
import { reductionView } from './native-reduce.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const hasNative = nativeForTests().ok;

type Reduce = (x: tf.Tensor, axis?: number | number[], keepDims?: boolean) => tf.Tensor;
const REDUCE: [string, Reduce][] = [
  ['sum', tf.sum],
  ['mean', tf.mean],
  ['max', tf.max],
  ['min', tf.min],
];
/** [axis, keepDims] on a [2, 3, 4] input: last, first, middle, contiguous pairs, all, non-contiguous (stock path). */
const AXES: [number | number[] | undefined, boolean][] = [
  [-1, false],
  [0, false],
  [1, true],
  [[1, 2], false],
  [[0, 1], true],
  [undefined, false],
  [[0, 2], false],
];

describe('reductionView', () => {
  it('views contiguous axes as [outer, r, inner] and refuses gaps', () => {
    expect(reductionView([2, 3, 4], [1])).toEqual([2, 3, 4]);
    expect(reductionView([2, 3, 4], [2, 1])).toEqual([2, 12, 1]);
    expect(reductionView([2, 3, 4], [0, 2])).toBeUndefined();
  });
});

describe.skipIf(!hasNative)('native reductions and softmax', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  const cases = REDUCE.flatMap(([name, op]) =>
    AXES.map(([axis, keep]) => [name, axis, keep, op] as const),
  );
  it.each(cases)(
    '%s over axis %j (keepDims %s): forward and gradient match the stock kernel',
    async (_n, axis, keep, op) => {
      const inputs = [randomSpec([2, 3, 4], 31)];
      const f = (x: tf.Tensor) => [
        op(x, axis, keep),
        tf.grad((t: tf.Tensor) => tf.sum(tf.square(op(t, axis, keep))))(x),
      ];
      const native = await runOn('native', inputs, f);
      const cpu = await runOn('cpu', inputs, f);
      expect(native.shapes).toEqual(cpu.shapes);
      native.values.forEach((v, i) => {
        expect(closeness(v, cpu.values[i])).toBeLessThanOrEqual(1);
      });
    },
  );

  it('sums a hand-derived case', async () => {
    const r = await runOn(
      'native',
      [{ shape: [2, 3], values: Float32Array.of(1, 2, 3, 4, 5, 6) }],
      (x) => [tf.sum(x, 0), tf.sum(x, 1), tf.max(x, 1)],
    );
    expect(r.values.map((v) => Array.from(v))).toEqual([
      [5, 7, 9],
      [6, 15],
      [3, 6],
    ]);
  });

  it.each([[[4, 7]], [[2, 3, 5]], [[6, 1]]])(
    'softmax %j: forward matches stock, gradient matches numeric',
    async (shape) => {
      const inputs = [randomSpec(shape, 41, 3), randomSpec(shape, 42)];
      const loss = (x: tf.Tensor, w: tf.Tensor) => tf.sum(tf.mul(tf.softmax(x), w)) as tf.Scalar;
      const native = await runOn('native', inputs, (x, w) => [
        tf.softmax(x),
        tf.grad((t: tf.Tensor) => loss(t, w))(x),
      ]);
      const cpu = await runOn('cpu', inputs, (x) => tf.softmax(x));
      expect(closeness(native.values[0], cpu.values[0])).toBeLessThanOrEqual(1);
      expect(
        closeness(native.values[1], numericGrad(inputs, 0, loss), 2e-3, 1e-2),
      ).toBeLessThanOrEqual(1);
    },
  );

  it('softmax is stable for large logits and logSoftmax/logSumExp match the stock kernels', async () => {
    const inputs = [{ shape: [2, 3], values: Float32Array.of(1000, 1001, 1002, -5, 0, 5) }];
    const f = (x: tf.Tensor) => [tf.softmax(x), tf.logSoftmax(x), tf.logSumExp(x, -1)];
    const native = await runOn('native', inputs, f);
    const cpu = await runOn('cpu', inputs, f);
    expect(Array.from(native.values[0]).every(Number.isFinite)).toBe(true);
    native.values.forEach((v, i) => {
      expect(closeness(v, cpu.values[i])).toBeLessThanOrEqual(1);
    });
    // log-sum-exp of [1000, 1001, 1002] = 1002 + log(1 + e^-1 + e^-2)
    expect(native.values[2][0]).toBeCloseTo(1002 + Math.log(1 + Math.exp(-1) + Math.exp(-2)), 3);
  });
});
