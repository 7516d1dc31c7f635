// The WGSL log-prob stats kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's: per-token (logp, entropy), logsumexp and dz within 1e-4 of the largest value, for a
// vocabulary one stride covers and one needing many, with the WGSL programs doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { logprobStats, logprobStatsGrad } from '../fused/fused-logprob-stats.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

async function run(backend: 'native' | 'webgpu', rows: number, v: number) {
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
  const z = tf.tensor2d(randomValues(rows * v, 3, 6), [rows, v]);
  const targets = tf.tensor1d(
    Int32Array.from({ length: rows }, (_, i) => (i * 37) % v),
    'int32',
  );
  const dy = tf.tensor2d(randomValues(rows * 2, 5), [rows, 2]);
  const [stats, lse] = logprobStats(z, targets);
  const dz = logprobStatsGrad(z, targets, lse, stats, dy, 1 / 0.7);
  const read = async (t: tf.Tensor) => Float32Array.from(await t.data());
  const out = { stats: await read(stats), lse: await read(lse), dz: await read(dz), keys };
  if (original) be.runWebGPUProgram = original;
  tf.dispose([z, targets, dy, stats, lse, dz]);
  return out;
}

function expectClose(got: Float32Array, want: Float32Array, what: string) {
  expect(got.length, what).toBe(want.length);
  let scale = 0;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < want.length; i++)
    expect(Math.abs(got[i]! - want[i]!), `${what}[${i}]`).toBeLessThan(1e-4 * scale + 1e-6);
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL log-prob stats on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([
    [4, 50],
    [9, 1000],
  ])(
    '%d rows x vocabulary %d: stats, lse, dz equal the native kernels within 1e-4',
    async (rows, v) => {
      const want = await run('native', rows, v);
      const got = await run('webgpu', rows, v);
      expectClose(got.stats, want.stats, 'stats');
      expectClose(got.lse, want.lse, 'lse');
      expectClose(got.dz, want.dz, 'dz');
      for (const key of ['rl2LogprobStats', 'rl2LogprobStatsGrad'])
        expect(got.keys.includes(key), key).toBe(true);
    },
    120_000,
  );
});
