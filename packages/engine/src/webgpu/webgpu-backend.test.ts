// The WebGPU backend on whatever adapter Dawn finds here (CI: Mesa's lavapipe, a software
// Vulkan device): it starts only when asked or on real hardware, names its adapter, and every
// op the decoder models and trainers use gives the cpu backend's values and gradients.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../errors.js';
import { initEngine } from '../init-engine.js';
import { softmaxCrossEntropy } from '../softmax-cross-entropy.js';
import { closeness, randomSpec, runOn, type TensorSpec } from '../testing/backend-check.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';
import { mayHaveGpu } from './gpu-devices.js';

const gpu = webgpuForTests();

describe.skipIf(!gpu.ok)('webgpu backend', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'cpu', env: {}, logger: () => {} }); // gradients registered
  });

  it('RL2_BACKEND=webgpu starts it and the one line names the adapter and its limits', async () => {
    const lines: string[] = [];
    const info = await initEngine({ env: { RL2_BACKEND: 'webgpu' }, logger: (l) => lines.push(l) });
    expect(info.backend).toBe('webgpu');
    expect(tf.getBackend()).toBe('webgpu');
    expect(info.nativeKernels).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^rl2 engine: backend webgpu, adapter \S+ \S+.*: .+; storage binding \d+ MiB, /,
    );
    expect(lines[0]).toMatch(/, buffer \d+ MiB, workgroup memory \d+ KiB, shader-f16 (yes|no)$/);
    if (info.adapter?.software) expect(lines[0]).toContain('(software)');
    await tf.setBackend('cpu');
  });

  it.skipIf(mayHaveGpu())('auto never takes a software adapter by itself', async () => {
    const info = await initEngine({ env: {}, logger: () => {} });
    expect(info.backend).not.toBe('webgpu');
  });

  it('asking for webgpu where no adapter starts is an error that says why, not a fallback', () => {
    const dist = join(import.meta.dirname, '..', '..', 'dist', 'index.js');
    const script =
      `const { initEngine } = await import(${JSON.stringify(dist)});` +
      `await initEngine({ backend: 'webgpu', logger: () => {} }).then(` +
      `(i) => console.log('started ' + i.backend), (e) => console.log(e.code + ': ' + e.message));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, VK_ICD_FILENAMES: '/nonexistent-icd.json', VK_DRIVER_FILES: '/none' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    expect(out).toMatch(/^BACKEND_UNAVAILABLE: backend "webgpu" cannot start: no WebGPU adapter/);
    expect(out).toMatch(/RL2_BACKEND \/ trainer\.backend/);
    expect(EngineError).toBeDefined();
  });
});

/** [name, inputs, forward]: the ops under the models' layers and the trainers' losses. */
const OPS: [string, TensorSpec[], (...xs: tf.Tensor[]) => tf.Tensor][] = [
  ['matMul', [randomSpec([33, 70], 1), randomSpec([70, 45], 2)], (a, b) => tf.matMul(a!, b!)],
  [
    'matMul transposed (x W^T, as every projection)',
    [randomSpec([17, 64], 3), randomSpec([40, 64], 4)],
    (a, b) => tf.matMul(a!, b!, false, true),
  ],
  [
    'batched matMul (attention scores)',
    [randomSpec([4, 9, 16], 5), randomSpec([4, 11, 16], 6)],
    (a, b) => tf.matMul(a!, b!, false, true),
  ],
  [
    'RMSNorm as composite ops',
    [randomSpec([6, 32], 7), randomSpec([32], 8)],
    (x, w) => tf.mul(tf.mul(x!, tf.rsqrt(tf.add(tf.mean(tf.square(x!), -1, true), 1e-6))), w!),
  ],
  [
    'SwiGLU (silu(gate) * up)',
    [randomSpec([5, 24], 9, 3), randomSpec([5, 24], 10)],
    (g, u) => tf.mul(tf.mul(g!, tf.sigmoid(g!)), u!),
  ],
  [
    'rotary (split, sin/cos, concat)',
    [randomSpec([3, 8, 16], 11), randomSpec([8, 8], 12, 3)],
    (x, theta) => {
      const [a, b] = tf.split(x!, 2, -1) as [tf.Tensor, tf.Tensor];
      const [cos, sin] = [tf.cos(theta!), tf.sin(theta!)];
      return tf.concat(
        [tf.sub(tf.mul(a, cos), tf.mul(b, sin)), tf.add(tf.mul(b, cos), tf.mul(a, sin))],
        -1,
      );
    },
  ],
  [
    'causal softmax attention',
    [randomSpec([2, 7, 8], 13), randomSpec([2, 7, 8], 14), randomSpec([2, 7, 8], 15)],
    (q, k, v) => {
      const scores = tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(8));
      const mask = tf.linalg.bandPart(tf.ones([7, 7]), -1, 0);
      const masked = tf.add(scores, tf.mul(tf.sub(1, mask), -1e9));
      return tf.matMul(tf.softmax(masked), v!);
    },
  ],
  [
    'log-softmax over the vocabulary, gathered at targets',
    [randomSpec([6, 50], 16, 4)],
    (z) =>
      tf.gather(
        tf.reshape(tf.logSoftmax(z!), [-1]),
        tf.tensor1d([3, 57, 140, 151, 220, 299], 'int32'),
      ),
  ],
  [
    'embedding lookup (gather, its gradient a segment sum)',
    [randomSpec([20, 12], 17)],
    (w) => tf.gather(w!, tf.tensor1d([3, 3, 0, 19, 7], 'int32')),
  ],
  [
    'softmax cross-entropy (the engine op)',
    [randomSpec([5, 30], 18, 3)],
    (z) => softmaxCrossEntropy(z!, tf.tensor1d([0, 29, 4, 4, 11], 'int32')),
  ],
  [
    'logSumExp and exp',
    [randomSpec([4, 40], 19, 5)],
    (z) => tf.exp(tf.sub(z!, tf.logSumExp(z!, -1, true))),
  ],
];

/** The op's value and the gradient of sum(value * weights) for every input, on `backend`. */
function withGradients(backend: string, specs: TensorSpec[], f: (...xs: tf.Tensor[]) => tf.Tensor) {
  const weights = randomSpec(outShape(specs, f), 99);
  return runOn(backend, [...specs, weights], (...all) => {
    const xs = all.slice(0, specs.length);
    const w = all[specs.length]!;
    const grads = tf.grads((...ins: tf.Tensor[]) => tf.sum(tf.mul(f(...ins), w)))(xs);
    return [f(...xs), ...grads];
  });
}

function outShape(specs: TensorSpec[], f: (...xs: tf.Tensor[]) => tf.Tensor): number[] {
  return tf.tidy(() => f(...specs.map((s) => tf.tensor(s.values, s.shape))).shape);
}

describe.skipIf(!gpu.ok)('webgpu kernels equal cpu, forward and gradient (1e-4 relative)', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'cpu', env: {}, logger: () => {} });
    await initEngine({ backend: 'webgpu', env: {}, logger: () => {} });
    await tf.setBackend('cpu');
  });

  it.each(OPS)('%s', async (_, specs, f) => {
    const want = await withGradients('cpu', specs, f);
    const got = await withGradients('webgpu', specs, f);
    expect(got.shapes).toEqual(want.shapes);
    want.values.forEach((w, i) => {
      expect(closeness(got.values[i]!, w, 1e-5, 1e-4), `output ${i}`).toBeLessThanOrEqual(1);
    });
    await tf.setBackend('cpu');
  });
});
