// The WGSL SwiGLU kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's fused kernel: silu(gate) * up and both gradients within 1e-4 of the largest value,
// for 2-D and 3-D shapes, with the WGSL programs doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { fusedSwiGlu } from '../fused/fused-swiglu.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

async function run(backend: 'native' | 'webgpu', shape: number[]) {
  await initEngine({ backend, threads: 1, env: {}, logger: () => {} });
  const keys: string[] = [];
  const be = tf.backend() as unknown as {
    runWebGPUProgram?: (p: { shaderKey: string }, ...rest: unknown[]) => unknown;
  };
  const original = be.runWebGPUProgram?.bind(be);
  if (original)
    be.runWebGPUProgram = (p, ...rest) => {
      keys.push(p.shaderKey);
      return original(p, ...rest);
    };
  const n = shape.reduce((a, b) => a * b, 1);
  const g = tf.tensor(randomValues(n, 3, 4), shape);
  const u = tf.tensor(randomValues(n, 5, 2), shape);
  const c = tf.tensor(randomValues(n, 7), shape);
  const f = (gi: tf.Tensor, ui: tf.Tensor) => {
    const y = fusedSwiGlu(gi, ui);
    if (!y) throw new Error(`no fused SwiGLU on ${backend}`);
    return tf.sum(tf.mul(y, c));
  };
  const y = fusedSwiGlu(g, u)!;
  const [dg, du] = tf.grads(f)([g, u]);
  const read = async (t: tf.Tensor) => Float32Array.from(await t.data());
  const out = { y: await read(y), dg: await read(dg!), du: await read(du!), keys };
  if (original) be.runWebGPUProgram = original;
  tf.dispose([g, u, c, y, dg!, du!]);
  return out;
}

function expectClose(got: Float32Array, want: Float32Array, what: string) {
  expect(got.length, what).toBe(want.length);
  let scale = 0;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < want.length; i++)
    expect(Math.abs(got[i]! - want[i]!), `${what}[${i}]`).toBeLessThan(1e-4 * scale + 1e-6);
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL SwiGLU on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([[[3, 70]], [[2, 5, 40]], [[130, 600]]])(
    'shape %j: y, d/dgate, d/dup equal the native kernel within 1e-4',
    async (shape) => {
      const want = await run('native', shape);
      const got = await run('webgpu', shape);
      expectClose(got.y, want.y, 'y');
      expectClose(got.dg, want.dg, 'dgate');
      expectClose(got.du, want.du, 'dup');
      for (const key of ['rl2SwiGlu', 'rl2SwiGluDg', 'rl2SwiGluDu'])
        expect(got.keys.includes(key), key).toBe(true);
    },
    120_000,
  );
});
