// The WGSL RMSNorm kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's fused kernel: forward and both gradients within 1e-4 of the largest value, at a row width one
// workgroup covers in one stride and one several strides need, with the WGSL programs (not
// the composite ops) doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { fusedRmsNorm } from '../fused/fused-rms-norm.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityFailures, valueAndGrads, webgpuAgainstNative } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

/** y, dx and dw of sum(y * c) (c fixed) through fusedRmsNorm. */
function rmsNormAndGrads(rows: number, h: number) {
  const x = tf.tensor2d(randomValues(rows * h, 3, 2), [rows, h]);
  const w = tf.tensor1d(randomValues(h, 5, 1.5));
  const { y, grads } = valueAndGrads((xi, wi) => fusedRmsNorm(xi!, wi!, 1e-6), [x, w]);
  return { y, dx: grads[0]!, dw: grads[1]! };
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
      const { errors, shaderKeys } = await webgpuAgainstNative(() => rmsNormAndGrads(rows, h));
      expect(Object.keys(errors)).toEqual(['y', 'dx', 'dw']);
      expect(parityFailures(errors)).toBe('');
      for (const key of [
        `rl2RmsNorm_${wg}`,
        `rl2RmsNormDx_${wg}`,
        `rl2RmsNormScale_${wg}`,
        'rl2RmsNormDw',
      ])
        expect(
          shaderKeys.some((k) => k.startsWith(key)),
          key,
        ).toBe(true);
    },
    120_000,
  );
});
