// The WGSL rotary kernel on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's fused kernel: y and dx within 1e-4 of the largest value, at pair counts that are not
// multiples of the workgroup size, with cos and sin halves that differ (each index is checked),
// and with the WGSL programs (not the composite rotation matmul) doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { fusedRotary } from '../fused/fused-rotary.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityFailures, valueAndGrads, webgpuAgainstNative } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

/** y and dx of sum(y * c) (c fixed) through fusedRotary; cos and sin [n, 1, d] are constants. */
function rotaryAndGrad(n: number, heads: number, d: number) {
  const x = tf.tensor3d(randomValues(n * heads * d, 3, 2), [n, heads, d]);
  const cos = tf.tensor3d(randomValues(n * d, 5), [n, 1, d]);
  const sin = tf.tensor3d(randomValues(n * d, 11), [n, 1, d]);
  const { y, grads } = valueAndGrads((xi) => fusedRotary(xi as tf.Tensor3D, cos, sin), [x]);
  return { y, dx: grads[0]! };
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL rotary on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([
    [7, 3, 10],
    [33, 5, 62],
    [129, 3, 66],
  ])(
    '%d positions x %d heads x d %d: y and dx equal the native kernel within 1e-4',
    async (n, heads, d) => {
      expect(((n * heads * d) / 2) % 64).not.toBe(0);
      const { errors, shaderKeys } = await webgpuAgainstNative(() => rotaryAndGrad(n, heads, d));
      expect(Object.keys(errors)).toEqual(['y', 'dx']);
      expect(parityFailures(errors)).toBe('');
      for (const key of ['rl2Rotary', 'rl2RotaryBack'])
        expect(shaderKeys.includes(key), key).toBe(true);
      expect(
        shaderKeys.filter((k) => /matmul/i.test(k)),
        'the composite rotation ran',
      ).toEqual([]);
    },
    120_000,
  );
});
