// The WGSL log-prob stats kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's: per-token (logp, entropy), logsumexp and dz within 1e-4 of the largest value, for a
// vocabulary one stride covers and one needing many, with the WGSL programs doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { logprobStats, logprobStatsGrad } from '../fused/fused-logprob-stats.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityFailures, webgpuAgainstNative } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

/** (logp, entropy), lse and dz of a [rows, v] logits block at temperature 0.7. */
function statsAndGrad(rows: number, v: number) {
  const z = tf.tensor2d(randomValues(rows * v, 3, 6), [rows, v]);
  const targets = tf.tensor1d(
    Int32Array.from({ length: rows }, (_, i) => (i * 37) % v),
    'int32',
  );
  const dy = tf.tensor2d(randomValues(rows * 2, 5), [rows, 2]);
  const [stats, lse] = logprobStats(z, targets);
  return { stats, lse, dz: logprobStatsGrad(z, targets, lse, stats, dy, 1 / 0.7) };
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
      const { errors, shaderKeys } = await webgpuAgainstNative(() => statsAndGrad(rows, v));
      expect(Object.keys(errors)).toEqual(['stats', 'lse', 'dz']);
      expect(parityFailures(errors)).toBe('');
      for (const key of ['rl2LogprobStats', 'rl2LogprobStatsGrad'])
        expect(shaderKeys.includes(key), key).toBe(true);
    },
    120_000,
  );
});
