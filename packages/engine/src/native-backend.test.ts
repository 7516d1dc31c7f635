import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { kernelDispatches } from './dispatch-counter.js';
import { decodeKernels } from './fused/fused-decode.js';
import { initEngine } from './init-engine.js';
import { NATIVE_BACKEND, nativeKernelOverrides, registerNativeBackend } from './native-backend.js';
import { softmaxCrossEntropy } from './softmax-cross-entropy.js';
import { nativeForTests } from './testing/native-for-tests.js';

const load = nativeForTests();

describe.skipIf(!load.ok)('native backend registration', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
  });

  it('has every stock cpu kernel plus the fused model kernels, and overrides only named ones', () => {
    const cpu = tf
      .getKernelsForBackend('cpu')
      .map((k) => k.kernelName)
      .sort();
    const native = tf
      .getKernelsForBackend(NATIVE_BACKEND)
      .map((k) => k.kernelName)
      .sort();
    expect(native).toEqual(
      [
        ...cpu,
        'Rl2SoftmaxCrossEntropy',
        'Rl2SoftmaxCrossEntropyGrad',
        'Rl2RmsNorm',
        'Rl2RmsNormGrad',
        'Rl2SwiGlu',
        'Rl2SwiGluGrad',
        'Rl2Rotary',
        'Rl2Attention',
        'Rl2AttentionGrad',
        'Rl2FlashAttention',
        'Rl2FlashAttentionGrad',
        'Rl2LogprobStats',
        'Rl2LogprobStatsGrad',
        'Rl2AdamW',
        'Rl2AdamWInPlace',
        'Rl2FrozenLinear',
      ].sort(),
    );
    for (const o of nativeKernelOverrides()) expect(cpu).toContain(o.kernelName);
  });

  it('counts one dispatch per kernel run and per direct decode-kernel call', () => {
    const a = tf.tensor1d([1, 2, 3]);
    const before = kernelDispatches();
    const y = tf.add(tf.mul(a, 2), a);
    expect(kernelDispatches() - before).toBe(2);
    const kernels = decodeKernels()!;
    const out = new Float32Array(1);
    kernels.matMulTransposed(Float32Array.of(1, 2), Float32Array.of(3, 4), 1, 1, 2, out);
    expect(out[0]).toBe(11);
    expect(kernelDispatches() - before).toBe(3);
    tf.dispose([a, y]);
  });

  it('is idempotent: a second registration is refused without touching the first', () => {
    expect(registerNativeBackend(load.ok ? load.addon : undefined)).toBe(false);
    expect(tf.getBackend()).toBe(NATIVE_BACKEND);
  });

  it('leaks no tensors through a training-like step (fused matmul, rotary split/concat, loss, grads)', async () => {
    await tf.setBackend(NATIVE_BACKEND);
    const w = tf.variable(tf.randomNormal([16, 10]));
    const x = tf.randomNormal([2, 3, 16]);
    const labels = tf.tensor2d([1, 2, 3, 4, 5, -1], [2, 3], 'int32');
    const step = () =>
      tf.tidy(() => {
        const { value, grads } = tf.variableGrads(() => {
          const h = tf.matMul(x, w);
          const [a, b] = tf.split(h, 2, 2);
          const logits = tf.concat([tf.neg(b), a], 2);
          return tf.mean(
            softmaxCrossEntropy(
              tf.add(
                tf.fused.matMul({
                  a: tf.reshape(logits, [6, 10]),
                  b: tf.eye(10),
                  activation: 'relu',
                }),
                0,
              ),
              tf.reshape(labels, [6]),
            ),
          );
        });
        tf.dispose(grads);
        return value;
      });
    step().dispose();
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) step().dispose();
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([w, x, labels]);
  });
});
