import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { randomSpec, runOn } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const hasNative = nativeForTests().ok;

describe.skipIf(!hasNative)('Unpack on the native backend', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  it.each([0, 1, 2, -1])(
    'equals the stock cpu kernel along axis %d, forward and gradient',
    async (axis) => {
      const inputs = [randomSpec([3, 4, 5], 31)];
      // weights per output so each piece's gradient differs
      const f = (x: tf.Tensor) => [
        ...tf.unstack(x, axis),
        tf.grad((t: tf.Tensor) =>
          tf.addN(tf.unstack(t, axis).map((p, i) => tf.mul(tf.sum(p), i + 1))),
        )(x),
      ];
      const native = await runOn('native', inputs, f);
      const cpu = await runOn('cpu', inputs, f);
      expect(native.shapes).toEqual(cpu.shapes);
      native.values.forEach((v, i) => {
        expect(Array.from(v)).toEqual(Array.from(cpu.values[i]!));
      });
    },
  );

  it('unstacks int32 and bool tensors, and a hand-derived [2, 3] along axis 1', () => {
    const [a, b, c] = tf.unstack(tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3], 'int32'), 1);
    expect([
      a!.dtype,
      Array.from(a!.dataSync()),
      Array.from(b!.dataSync()),
      Array.from(c!.dataSync()),
    ]).toEqual(['int32', [1, 4], [2, 5], [3, 6]]);
    const [p, q] = tf.unstack(tf.tensor1d([1, 0], 'bool'));
    expect([p!.dtype, p!.dataSync()[0], q!.dataSync()[0]]).toEqual(['bool', 1, 0]);
  });
});
