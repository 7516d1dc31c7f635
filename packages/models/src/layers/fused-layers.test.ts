import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { adamWUpdate, fusedSwiGlu, initEngine } from '@rl2/engine';
import {
  closeness,
  nativeForTests,
  numericGrad,
  randomSpec,
  randomValues,
  runOn,
  type TensorSpec,
} from '@rl2/engine/testing';
import { causalMask, groupedQueryAttention } from './attention.js';
import { rmsNorm } from './rms-norm.js';
import { applyRotary, rotateHalfMatrix } from './rotary.js';

// Each fused kernel (native) against the composite ops on the stock cpu backend, forward and
// every input gradient, and against central differences on native.
const hasNative = nativeForTests().ok;

/** A weighted sum makes every output element matter to the loss. */
function weighted(y: tf.Tensor, seed: number): tf.Scalar {
  return tf.sum(tf.mul(y, tf.tensor(randomSpec(y.shape, seed).values, y.shape))) as tf.Scalar;
}

/** Forward and all-input gradients of `f`, equal on native and cpu; numeric gradient of input `which` on native. */
async function checkFused(
  inputs: TensorSpec[],
  f: (...xs: tf.Tensor[]) => tf.Tensor,
  grads: number[],
  numeric: number,
) {
  const loss = (...xs: tf.Tensor[]) => weighted(f(...xs), 99);
  const run = (...xs: tf.Tensor[]) => [
    f(...xs),
    ...tf
      .grads(loss)(xs)
      .filter((_, i) => grads.includes(i)),
  ];
  const native = await runOn('native', inputs, run);
  const cpu = await runOn('cpu', inputs, run);
  expect(native.shapes).toEqual(cpu.shapes);
  native.values.forEach((v, i) => {
    expect(closeness(v, cpu.values[i]!, 1e-5, 1e-3), `output ${i}`).toBeLessThanOrEqual(1);
  });
  await tf.setBackend('native');
  const g = numericGrad(inputs, numeric, loss);
  expect(closeness(native.values[1 + grads.indexOf(numeric)]!, g, 5e-3, 2e-2)).toBeLessThanOrEqual(
    1,
  );
}

describe.skipIf(!hasNative)('fused native kernels', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  it('RMSNorm matches the composite ops (x [2, 3, 8], w [8]) and central differences', async () => {
    const inputs = [randomSpec([2, 3, 8], 1, 2), randomSpec([8], 2)];
    await checkFused(inputs, (x, w) => rmsNorm(x!, w!, 1e-6), [0, 1], 0);
  });

  it('SwiGLU silu(gate) * up matches the composite ops and central differences', async () => {
    const inputs = [randomSpec([5, 7], 3, 4), randomSpec([5, 7], 4)];
    const f = (g: tf.Tensor, u: tf.Tensor) =>
      fusedSwiGlu(g, u) ?? tf.mul(tf.mul(g, tf.sigmoid(g)), u);
    await checkFused(inputs, f, [0, 1], 0);
  });

  it('rotary matches the matmul rotate_half composite and central differences', async () => {
    const n = 5;
    const d = 8;
    const angles = Array.from(
      { length: n * d },
      (_, i) => Math.floor(i / d) * (0.3 + (i % (d / 2)) * 0.1),
    );
    const cos = { shape: [n, 1, d], values: Float32Array.from(angles, Math.cos) };
    const sin = { shape: [n, 1, d], values: Float32Array.from(angles, Math.sin) };
    const f = (x: tf.Tensor, c: tf.Tensor, s: tf.Tensor) =>
      applyRotary(x as tf.Tensor3D, c as tf.Tensor3D, s as tf.Tensor3D, rotateHalfMatrix(d));
    await checkFused([randomSpec([n, 3, d], 5), cos, sin], f, [0], 0);
  });

  it('grouped-query attention with a causal mask matches the composite ops (q, k, v gradients)', async () => {
    // B 2, S = L 6, 4 query heads over 2 kv heads, d 4; a padding-style mask on row 1
    const mask = tf.tidy(
      () => tf.concat([causalMask(6), causalMask(6)]).dataSync() as Float32Array,
    );
    mask[6 * 6 + 5 * 6 + 1] = -1e9;
    const inputs = [
      randomSpec([2, 6, 4, 4], 6, 2),
      randomSpec([2, 2, 6, 4], 7, 2),
      randomSpec([2, 2, 6, 4], 8),
      { shape: [2, 6, 6], values: mask },
    ];
    const f = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, m: tf.Tensor) =>
      groupedQueryAttention(q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, m as tf.Tensor3D);
    await checkFused(inputs, f, [0, 1, 2], 1);
  });

  it('attention of one packed sequence: 2 query heads on 1 kv head, mask [1, S, S]', async () => {
    const inputs = [
      randomSpec([1, 5, 2, 4], 9),
      randomSpec([1, 1, 5, 4], 10),
      randomSpec([1, 1, 5, 4], 11),
      { shape: [1, 5, 5], values: causalMask(5).dataSync() as Float32Array },
    ];
    const f = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, m: tf.Tensor) =>
      groupedQueryAttention(q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, m as tf.Tensor3D);
    await checkFused(inputs, f, [0, 1, 2], 2);
  });

  it('AdamW step matches the composite ops, and a hand-computed first step', async () => {
    const h = { lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01, step: 3 };
    const inputs = [
      randomSpec([3, 50], 12),
      randomSpec([3, 50], 13),
      randomSpec([3, 50], 14, 0.1),
      { shape: [3, 50], values: randomValues(150, 15).map(Math.abs) },
    ];
    const f = (p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor) =>
      Object.values(adamWUpdate(p, g, m, v, h));
    const native = await runOn('native', inputs, f);
    const cpu = await runOn('cpu', inputs, f);
    native.values.forEach((x, i) => {
      expect(closeness(x, cpu.values[i]!, 1e-6, 1e-5)).toBeLessThanOrEqual(1);
    });
    // step 1 from zero moments: m' = 0.1 g, v' = 0.01 g^2, update = sign(g) (up to eps)
    const one = await runOn(
      'native',
      [
        { shape: [2], values: Float32Array.of(1, -2) },
        { shape: [2], values: Float32Array.of(0.5, -3) },
        { shape: [2], values: new Float32Array(2) },
        { shape: [2], values: new Float32Array(2) },
      ],
      (p, g, m, v) => Object.values(adamWUpdate(p!, g!, m!, v!, { ...h, step: 1 })),
    );
    expect(one.values[0]![0]).toBeCloseTo(1 * (1 - 0.001) - 0.1, 5);
    expect(one.values[0]![1]).toBeCloseTo(-2 * (1 - 0.001) + 0.1, 5);
  });
});
