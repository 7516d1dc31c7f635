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
import { broadcastStrides } from './native-elementwise.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const hasNative = nativeForTests().ok;

type Binary = (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;
const BINARY: [string, Binary][] = [
  ['add', tf.add],
  ['sub', tf.sub],
  ['mul', tf.mul],
  ['div', tf.div],
  ['maximum', tf.maximum],
  ['minimum', tf.minimum],
  ['squaredDifference', tf.squaredDifference],
];
/** [aShape, bShape]: same shape, scalar, trailing-dim and middle-dim broadcasts, both sides broadcasting. */
const SHAPES: [number[], number[]][] = [
  [
    [3, 4],
    [3, 4],
  ],
  [[3, 4], []],
  [[], [3, 4]],
  [[2, 3, 4], [4]],
  [
    [2, 3, 4],
    [2, 1, 4],
  ],
  [
    [3, 1],
    [1, 4],
  ],
];

type Unary = (x: tf.Tensor) => tf.Tensor;
// Inputs are shifted per op into its domain (log, sqrt, rsqrt, reciprocal need x > 0).
const UNARY: [string, Unary, number][] = [
  ['exp', tf.exp, 0],
  ['log', tf.log, 2],
  ['neg', tf.neg, 0],
  ['sqrt', tf.sqrt, 2],
  ['rsqrt', tf.rsqrt, 2],
  ['sigmoid', tf.sigmoid, 0],
  ['square', tf.square, 0],
  ['relu', tf.relu, 0],
  ['tanh', tf.tanh, 0],
  ['abs', tf.abs, 0],
  ['reciprocal', tf.reciprocal, 2],
];

function shifted(spec: TensorSpec, by: number): TensorSpec {
  return { ...spec, values: (spec.values as Float32Array).map((v) => v + by) };
}

describe('broadcastStrides', () => {
  it('gives 0 for broadcast dims and row-major strides otherwise', () => {
    expect(Array.from(broadcastStrides([2, 1, 4], [2, 3, 4]))).toEqual([4, 0, 1]);
    expect(Array.from(broadcastStrides([4], [2, 3, 4]))).toEqual([0, 0, 1]);
    expect(Array.from(broadcastStrides([], [3]))).toEqual([0]);
  });
});

describe.skipIf(!hasNative)('native elementwise kernels', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  const binaryCases = BINARY.flatMap(([name, op]) =>
    SHAPES.map(([sa, sb]) => [name, sa, sb, op] as const),
  );
  it.each(binaryCases)(
    '%s %j with %j: forward and gradient match the stock cpu kernel',
    async (_name, sa, sb, op) => {
      // b kept away from 0 (div) and from a (max/min ties have no unique gradient)
      const inputs = [randomSpec(sa, 3), shifted(randomSpec(sb, 4, 0.4), 1.5)];
      const f = (a: tf.Tensor, b: tf.Tensor) => [
        op(a, b),
        ...tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.square(op(x, y))))([a, b]),
      ];
      const native = await runOn('native', inputs, f);
      const cpu = await runOn('cpu', inputs, f);
      expect(native.shapes).toEqual(cpu.shapes);
      native.values.forEach((v, i) => {
        expect(closeness(v, cpu.values[i])).toBeLessThanOrEqual(1);
      });
    },
  );

  it('pow forward matches the stock kernel and its gradient matches numeric gradients', async () => {
    const inputs = [shifted(randomSpec([2, 3], 7, 0.5), 1.5), randomSpec([3], 8)];
    const native = await runOn('native', inputs, (a, b) => [
      tf.pow(a, b),
      ...tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.pow(x, y)))([a, b]),
    ]);
    const cpu = await runOn('cpu', inputs, (a, b) => tf.pow(a, b));
    expect(closeness(native.values[0], cpu.values[0])).toBeLessThanOrEqual(1);
    const loss = (a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.pow(a, b)) as tf.Scalar;
    expect(
      closeness(native.values[1], numericGrad(inputs, 0, loss), 2e-3, 1e-2),
    ).toBeLessThanOrEqual(1);
    expect(
      closeness(native.values[2], numericGrad(inputs, 1, loss), 2e-3, 1e-2),
    ).toBeLessThanOrEqual(1);
  });

  const COMPARE: [string, Binary][] = [
    ['equal', tf.equal],
    ['notEqual', tf.notEqual],
    ['greater', tf.greater],
    ['greaterEqual', tf.greaterEqual],
    ['less', tf.less],
    ['lessEqual', tf.lessEqual],
  ];
  it.each(COMPARE)(
    '%s with broadcasting (and ties) matches the stock kernel, as bool',
    async (_name, op) => {
      const a = { shape: [3, 4], values: Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8, 2, 2, 3, 0) };
      const b = { shape: [4], values: Float32Array.of(2, 2, 3, 5) };
      const f = (x: tf.Tensor, y: tf.Tensor) => [op(x, y), op(y, x), op(x, tf.scalar(2))];
      const native = await runOn('native', [a, b], f);
      const cpu = await runOn('cpu', [a, b], f);
      expect(native.shapes).toEqual(cpu.shapes);
      native.values.forEach((v, i) => {
        expect(Array.from(v)).toEqual(Array.from(cpu.values[i]));
      });
      await tf.setBackend('native');
      expect(op(tf.tensor1d([1, 2]), tf.tensor1d([2, 2])).dtype).toBe('bool');
    },
  );

  it('float32 tensors stored as Uint8Array (bool -> float32 cast) take the native path correctly', async () => {
    const r = await runOn(
      'native',
      [{ shape: [2, 3], values: Float32Array.of(1, 5, 3, 0, 2, 9) }],
      (x) => tf.mul(tf.cast(tf.greater(x, 2), 'float32'), x),
    );
    expect(Array.from(r.values[0])).toEqual([0, 5, 3, 0, 0, 9]);
  });

  it('exp (vectorised polynomial) is within 2 ulp-ish of Math.exp over the float range, with exact edge cases', async () => {
    const xs = Float32Array.from([
      ...Array.from({ length: 2001 }, (_, i) => -100 + i * 0.1),
      -0,
      88.5,
      88.72,
      -87.5,
      -103,
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      Number.NaN,
    ]);
    const r = await runOn('native', [{ shape: [xs.length], values: xs }], (x) => [
      tf.exp(x),
      tf.sigmoid(x),
    ]);
    xs.forEach((x, i) => {
      const want = Math.fround(Math.exp(x));
      const got = r.values[0][i];
      if (Number.isNaN(x)) expect(got).toBeNaN();
      else if (want < 1.2e-38)
        expect(Math.abs(got - want)).toBeLessThan(1e-44); // subnormal results
      else if (!Number.isFinite(want)) expect(got).toBe(want);
      else expect(Math.abs(got - want) / want).toBeLessThan(3e-7);
    });
    expect(r.values[0][xs.length - 3]).toBe(0);
    expect(r.values[0][xs.length - 2]).toBe(Number.POSITIVE_INFINITY);
    expect(r.values[1][xs.length - 3]).toBe(0);
    expect(r.values[1][xs.length - 2]).toBe(1);
  });

  it('hand-derived broadcast add', async () => {
    const r = await runOn(
      'native',
      [
        { shape: [2, 1], values: Float32Array.of(10, 20) },
        { shape: [3], values: Float32Array.of(1, 2, 3) },
      ],
      tf.add,
    );
    expect(r.shapes[0]).toEqual([2, 3]);
    expect(Array.from(r.values[0])).toEqual([11, 12, 13, 21, 22, 23]);
  });

  it('int32 inputs go to the stock kernel and keep their dtype', async () => {
    await tf.setBackend('native');
    const y = tf.add(tf.tensor1d([1, 2], 'int32'), tf.tensor1d([3, 4], 'int32'));
    expect(y.dtype).toBe('int32');
    expect(Array.from(y.dataSync())).toEqual([4, 6]);
  });

  it.each(UNARY)(
    '%s: forward matches the stock kernel, gradient matches numeric gradients',
    async (_name, op, shift) => {
      const inputs = [shifted(randomSpec([3, 5], 12, 0.9), shift), randomSpec([3, 5], 13)];
      const native = await runOn('native', inputs, (x, w) => [
        op(x),
        tf.grad((t: tf.Tensor) => tf.sum(tf.mul(op(t), w)))(x),
      ]);
      const cpu = await runOn('cpu', inputs, (x) => op(x));
      expect(native.shapes[0]).toEqual([3, 5]);
      expect(closeness(native.values[0], cpu.values[0])).toBeLessThanOrEqual(1);
      const numeric = numericGrad(inputs, 0, (x, w) => tf.sum(tf.mul(op(x), w)) as tf.Scalar, 1e-3);
      expect(closeness(native.values[1], numeric, 5e-3, 1e-2)).toBeLessThanOrEqual(1);
    },
  );
});
