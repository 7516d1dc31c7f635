import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { softmaxCrossEntropy } from '../softmax-cross-entropy.js';
import { randomSpec, runOn, type TensorSpec } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';

const load = nativeForTests();

// Tensors above the per-thread grain (65,536 elements) are split across threads; every element
// or row is computed by the same code either way, so results must be bit-identical.
describe.skipIf(!load.ok)('native kernels split across threads', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  const labels: TensorSpec = {
    shape: [300],
    values: Int32Array.from({ length: 300 }, (_, i) => (i * 7) % 500),
    dtype: 'int32',
  };
  const f = (x: tf.Tensor, y: tf.Tensor, row: tf.Tensor, flat: tf.Tensor, l: tf.Tensor) => [
    tf.mul(x, y),
    tf.add(x, row),
    tf.sub(flat, tf.scalar(0.5)),
    tf.greater(x, row),
    tf.exp(x),
    tf.sigmoid(flat),
    tf.softmax(x),
    softmaxCrossEntropy(x, l),
    tf.grad((t: tf.Tensor) => tf.sum(softmaxCrossEntropy(t, l)))(x),
  ];

  it('gives bit-identical results with 1 and 3 threads', async () => {
    if (!load.ok) return;
    const inputs = [
      randomSpec([300, 500], 91, 3),
      randomSpec([300, 500], 92),
      randomSpec([500], 93),
      randomSpec([200_000], 94),
      labels,
    ];
    const one = await runOn('native', inputs, f);
    load.addon.setThreads(3);
    try {
      const three = await runOn('native', inputs, f);
      expect(three.shapes).toEqual(one.shapes);
      three.values.forEach((v, i) => {
        expect(Array.from(v)).toEqual(Array.from(one.values[i]));
      });
      const cpu = await runOn('cpu', inputs.slice(0, 3), (x, y, row) => [
        tf.mul(x, y),
        tf.add(x, row),
      ]);
      expect(Array.from(three.values[0])).toEqual(Array.from(cpu.values[0]));
      expect(Array.from(three.values[1])).toEqual(Array.from(cpu.values[1]));
    } finally {
      load.addon.setThreads(1);
    }
  });
});
