import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from './init-engine.js';

describe('early release of saved tensors in the backward pass', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'cpu', logger: () => {}, env: {} });
  });

  it('disposes a node’s saved tensors before the next node’s gradient runs, gradients unchanged, no leaks', () => {
    let savedByB: tf.Tensor[] = [];
    let bDisposedWhenARan: boolean | undefined;
    // y = b(a(x)), a(x) = 2x, b(u) = u^2: dy/dx = 2 * 2 (2x) = 8x
    const a = tf.customGrad((x, save) => {
      (save as tf.GradSaveFunc)([x as tf.Tensor]);
      return {
        value: tf.mul(x as tf.Tensor, 2),
        gradFunc: (dy: tf.Tensor) => {
          bDisposedWhenARan = savedByB.every((t) => t.isDisposed);
          return tf.mul(dy, 2);
        },
      };
    });
    const b = tf.customGrad((u, save) => {
      (save as tf.GradSaveFunc)([u as tf.Tensor]);
      return {
        value: tf.square(u as tf.Tensor),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          savedByB = saved;
          return tf.mul(dy, tf.mul(saved[0]!, 2));
        },
      };
    });
    const x = tf.tensor1d([1, -2, 3]);
    const before = tf.memory().numTensors;
    const g = tf.grad((t: tf.Tensor) => tf.sum(b(a(t))))(x);
    expect(Array.from(g.dataSync())).toEqual([8, -16, 24]);
    expect(bDisposedWhenARan).toBe(true);
    g.dispose();
    expect(tf.memory().numTensors).toBe(before);
    x.dispose();
  });

  it('keeps the tape for higher-order gradients: d2/dx2 x^3 = 6x', () => {
    const x = tf.tensor1d([1, 2, -1]);
    const d2 = tf.grad((t: tf.Tensor) =>
      tf.sum(tf.grad((u: tf.Tensor) => tf.sum(tf.pow(u, 3)))(t)),
    )(x);
    expect(Array.from(d2.dataSync())).toEqual([6, 12, -6]);
    tf.dispose([x, d2]);
  });
});
