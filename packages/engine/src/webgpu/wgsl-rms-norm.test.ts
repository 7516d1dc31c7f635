// The WGSL RMSNorm kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's fused kernel: forward and both gradients within 1e-4 of the largest value, at a row width one
// workgroup covers in one stride and one several strides need, with the WGSL programs (not
// the composite ops) doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { fusedRmsNorm } from '../fused/fused-rms-norm.js';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { randomValues } from '../testing/backend-check.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

/** y, dx and dw of sum(y * c) (c fixed) through fusedRmsNorm on `backend`, and the programs webgpu ran. */
async function run(backend: 'native' | 'webgpu', rows: number, h: number) {
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
  const x = tf.tensor2d(randomValues(rows * h, 3, 2), [rows, h]);
  const w = tf.tensor1d(randomValues(h, 5, 1.5));
  const c = tf.tensor2d(randomValues(rows * h, 7), [rows, h]);
  const f = (xi: tf.Tensor, wi: tf.Tensor) => {
    const y = fusedRmsNorm(xi, wi, 1e-6);
    if (!y) throw new Error(`no fused RMSNorm on ${backend}`);
    return tf.sum(tf.mul(y, c));
  };
  const y = fusedRmsNorm(x, w, 1e-6)!;
  const [dx, dw] = tf.grads(f)([x, w]);
  const read = async (t: tf.Tensor) => Float32Array.from(await t.data());
  const out = { y: await read(y), dx: await read(dx!), dw: await read(dw!), keys };
  if (original) be.runWebGPUProgram = original;
  tf.dispose([x, w, c, y, dx!, dw!]);
  return out;
}

/** Within 1e-4 of the largest |want| (the models' parity measure: sums that cancel keep float32's absolute error). */
function expectClose(got: Float32Array, want: Float32Array, what: string) {
  expect(got.length, what).toBe(want.length);
  let scale = 0;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < want.length; i++)
    expect(Math.abs(got[i]! - want[i]!), `${what}[${i}]: ${got[i]} vs ${want[i]}`).toBeLessThan(
      1e-4 * scale + 1e-6,
    );
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL RMSNorm on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([
    [5, 48, 64],
    [3, 200, 64],
    [70, 16, 64],
    [600, 24, 64],
    [2, 4100, 256],
  ])(
    '%d rows x %d (%d threads a row): y, dx, dw equal the native kernel within 1e-4',
    async (rows, h, wg) => {
      const want = await run('native', rows, h);
      const got = await run('webgpu', rows, h);
      expectClose(got.y, want.y, 'y');
      expectClose(got.dx, want.dx, 'dx');
      expectClose(got.dw, want.dw, 'dw');
      for (const key of [
        `rl2RmsNorm_${wg}`,
        `rl2RmsNormDx_${wg}`,
        `rl2RmsNormScale_${wg}`,
        'rl2RmsNormDw',
      ])
        expect(
          got.keys.some((k) => k.startsWith(key)),
          key,
        ).toBe(true);
    },
    120_000,
  );
});
