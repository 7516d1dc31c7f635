// The WGSL AdamW pass on the webgpu backend (CI: Mesa's lavapipe) against the native backend's
// in-place kernel (itself checked against the composite update: fused-adamw.test.ts): three
// steps of `adamWInPlace` give native's param, m and v within 1e-4 relative, over the variables'
// own GPU buffers (no tfjs program runs: the composite fallback would, and so would a scaled copy
// of the gradient for the step given a clipping factor), and a value read before a step is not
// served stale after it.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { adamWInPlace } from '../fused/fused-adamw.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityError } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';
import { workgroupsFor } from './wgsl-in-place.js';

const gpu = webgpuForTests();
const native = nativeForTests();

const HP = [
  { lr: 0.01, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1 },
  { lr: 0.003, beta1: 0.8, beta2: 0.999, eps: 1e-6, weightDecay: 0, gradScale: 0.3 },
  { lr: 0.05, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01 },
];

interface Gpu {
  tensorMap: Map<object, { resource?: unknown }>;
  runWebGPUProgram?: (...args: unknown[]) => unknown;
}

/** Three steps on `backend` over variables of n elements; values, and what steps 2 and 3 kept. */
async function threeSteps(backend: 'native' | 'webgpu', n: number) {
  await initEngine({ backend, threads: 1, env: {}, logger: () => {} });
  const own = (seed: number, f: (x: number) => number) =>
    tf.tidy(() => tf.variable(tf.tensor1d(randomValues(n, seed).map(f)), false));
  const [p, m, v] = [own(1, (x) => x), own(2, (x) => 0.1 * x), own(3, (x) => 0.01 * x * x)];
  const be = tf.backend() as unknown as Gpu;
  const bufferOf = (t: tf.Tensor) => be.tensorMap?.get(t.dataId)?.resource;
  const grads = HP.map((_, i) => tf.tensor1d(randomValues(n, 10 + i, 0.5)));
  const step = (i: number) => adamWInPlace(p, grads[i]!, m, v, { ...HP[i]!, step: i + 1 });
  step(0); // on webgpu: uploads the variables' host values to their GPU buffers
  const before = [p, m, v].map((t) => ({ dataId: t.dataId, buffer: bufferOf(t) }));
  const first = Float32Array.from(await p.data()); // cached on the host by webgpu: must not go stale
  let programs = 0;
  const original = be.runWebGPUProgram;
  if (original)
    be.runWebGPUProgram = (...args) => {
      programs++;
      return original.apply(be, args);
    };
  step(1);
  step(2);
  if (original) be.runWebGPUProgram = original;
  const values = await Promise.all([p, m, v].map(async (t) => Float32Array.from(await t.data())));
  const sameDataIds = [p, m, v].every((t, i) => t.dataId === before[i]!.dataId);
  const sameBuffers = [p, m, v].every((t, i) => bufferOf(t) === before[i]!.buffer);
  tf.dispose([p, m, v, ...grads]);
  return { values, first, sameDataIds, sameBuffers, programs };
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL AdamW in place on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([[300], [64 * 65_535 + 70]])(
    '%d elements: param, m and v equal the native kernel within 1e-4 after 3 steps, in place in one pass',
    async (n) => {
      const want = await threeSteps('native', n);
      const got = await threeSteps('webgpu', n);
      expect(want.sameDataIds).toBe(true);
      expect(got.sameDataIds, 'the variables keep their tensors: no assign of new ones').toBe(true);
      expect(got.sameBuffers, 'over the same GPU buffers').toBe(true);
      expect(got.programs, 'tfjs programs run (the composite fallback)').toBe(0);
      ['param', 'm', 'v'].forEach((name, i) => {
        const e = parityError(got.values[i]!, want.values[i]!);
        expect(e.scaled, `${name}[${e.at}]: ${e.got} vs ${e.want}`).toBeLessThan(1);
      });
      expect(Math.abs(got.values[0]![0]! - got.first[0]!)).toBeGreaterThan(1e-3); // moved, not stale
    },
    120_000,
  );

  it('workgroups cover n threads within 65535 a dimension', () => {
    expect(workgroupsFor(1, 64)).toEqual([1, 1]);
    expect(workgroupsFor(64 * 65_535, 64)).toEqual([65_535, 1]);
    const [x, y] = workgroupsFor(64 * 65_535 + 70, 64);
    expect([x, y]).toEqual([65_535, 2]);
    expect(x * y * 64).toBeGreaterThanOrEqual(64 * 65_535 + 70);
  });
});
