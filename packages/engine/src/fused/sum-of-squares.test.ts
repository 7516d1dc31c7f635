// sumOfSquares against hand-computed and double-loop sums on the cpu and native backends.
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { sumOfSquares } from './sum-of-squares.js';

const load = nativeForTests();

describe('sumOfSquares', () => {
  it('is sum(x^2) of a float32 tensor, hand-computed, on the cpu backend and with no new tensor', () => {
    tf.setBackend('cpu');
    const t = tf.tensor([1, -2, 3, 0.5], [2, 2]);
    const before = tf.memory().numTensors;
    expect(sumOfSquares(t)).toBe(1 + 4 + 9 + 0.25);
    expect(tf.memory().numTensors).toBe(before);
    t.dispose();
  });

  it('accumulates in double: 2^20 values of 0.1 give 10485.76 within 1e-9 relative', () => {
    tf.setBackend('cpu');
    const t = tf.fill([1024, 1024], 0.1);
    const x = Math.fround(0.1);
    expect(Math.abs(sumOfSquares(t) / (2 ** 20 * x * x) - 1)).toBeLessThan(1e-9);
    t.dispose();
  });

  it.skipIf(!load.ok)(
    'sums in the addon on native, over 2 threads, as the double loop does',
    async () => {
      await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
      const n = 3 * 2 ** 18 + 5; // several ranges of the addon's split and a tail of 5
      const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.01) * (1 + (i % 7)));
      let ref = 0;
      for (let i = 0; i < n; i++) ref += x[i]! * x[i]!;
      const t = tf.tensor(x);
      expect(Math.abs(sumOfSquares(t) / ref - 1)).toBeLessThan(1e-12);
      t.dispose();
      const small = tf.tensor([1, -2, 3, 0.5], [2, 2]);
      expect(sumOfSquares(small)).toBe(1 + 4 + 9 + 0.25);
      small.dispose();
    },
  );

  it('falls back to the composite ops for an int32 tensor', () => {
    tf.setBackend('cpu');
    const t = tf.tensor([3, 4], [2], 'int32');
    expect(sumOfSquares(t)).toBe(25);
    t.dispose();
  });
});
