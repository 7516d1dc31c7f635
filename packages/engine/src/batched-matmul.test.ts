import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from './init-engine.js';
import { nativeForTests } from './testing/native-for-tests.js';

const load = nativeForTests();

/** Largest |x - y| over two equally long arrays. */
function maxDiff(x: ArrayLike<number>, y: ArrayLike<number>): number {
  expect(x.length).toBe(y.length);
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i]! - y[i]!));
  return d;
}

const seeded = (shape: number[], seed: number) => tf.randomNormal(shape, 0, 1, 'float32', seed);

// Batched products and their gradients, forward and backward, against the plain 2D product of
// each batch's matrices on the same backend (2 threads: the batched split and the 2D path differ).
describe.skipIf(!load.ok)('batched matMul equals the per-batch plain products', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });
  afterAll(() => {
    if (load.ok) load.addon.setThreads(1);
  });

  const cases: [number[], number[], boolean, boolean][] = [
    [[4, 96, 48], [4, 48, 80], false, false],
    [[3, 128, 160], [3, 144, 128], true, true], // 3 large matrices on 2 threads: OpenBLAS-threaded each
    [[4, 96, 48], [4, 80, 48], false, true],
    [[5, 48, 96], [5, 48, 80], true, false],
  ];

  it.each(cases)('%j x %j (tA=%s, tB=%s): values and both gradients', (sa, sb, ta, tb) => {
    const a = seeded(sa, 1);
    const b = seeded(sb, 2);
    const w = seeded([sa[0]!, ta ? sa[2]! : sa[1]!, tb ? sb[1]! : sb[2]!], 3); // weights the output
    const loss = (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y, ta, tb), w));
    const batched = tf.matMul(a, b, ta, tb);
    const [da, db] = tf.grads(loss)([a, b]);
    const as = tf.unstack(a);
    const bs = tf.unstack(b);
    const plain = tf.stack(as.map((ai, i) => tf.matMul(ai, bs[i]!, ta, tb)));
    const ws = tf.unstack(w);
    const per = as.map((ai, i) =>
      tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y, ta, tb), ws[i]!)))([
        ai,
        bs[i]!,
      ]),
    );
    expect(maxDiff(batched.dataSync(), plain.dataSync())).toBeLessThan(1e-4);
    expect(maxDiff(da!.dataSync(), tf.stack(per.map((p) => p[0]!)).dataSync())).toBeLessThan(1e-4);
    expect(maxDiff(db!.dataSync(), tf.stack(per.map((p) => p[1]!)).dataSync())).toBeLessThan(1e-4);
  });

  it.each([false, true])(
    'a weight shared by the batch (tB=%s) gets the sum of the per-batch gradients',
    (tb) => {
      const x = seeded([4, 64, 48], 4);
      const wt = seeded(tb ? [40, 48] : [48, 40], 5);
      const target = seeded([4, 64, 40], 6);
      const dw = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, v, false, tb), target)))(wt);
      const sum = tf.addN(
        tf
          .unstack(x)
          .map((xi, i) =>
            tf.grad((v: tf.Tensor) =>
              tf.sum(tf.mul(tf.matMul(xi, v, false, tb), tf.unstack(target)[i]!)),
            )(wt),
          ),
      );
      expect(dw.shape).toEqual(wt.shape);
      expect(maxDiff(dw.dataSync(), sum.dataSync())).toBeLessThan(1e-3);
    },
  );

  it.each([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])('a 2D product split by rows over 2 threads equals it on 1 thread (tA=%s, tB=%s)', (ta, tb) => {
    if (!load.ok) return;
    const a = seeded(ta ? [128, 300] : [300, 128], 7); // M = 300: 160 + 140 rows
    const b = seeded(tb ? [160, 128] : [128, 160], 8);
    const two = tf.matMul(a, b, ta, tb);
    const folded = tf.matMul(tf.reshape(a, ta ? [1, 128, 300] : [3, 100, 128]), b, ta, tb);
    load.addon.setThreads(1);
    try {
      const one = tf.matMul(a, b, ta, tb);
      expect(maxDiff(two.dataSync(), one.dataSync())).toBeLessThan(1e-4);
      expect(maxDiff(folded.dataSync(), one.dataSync())).toBeLessThan(1e-4);
    } finally {
      load.addon.setThreads(2);
    }
  });
});
