// The WGSL SwiGLU kernels on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's fused kernel: silu(gate) * up and both gradients within 1e-4 of the largest value,
// for 2-D and 3-D shapes, with the WGSL programs doing the work.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { fusedSwiGlu } from '../fused/fused-swiglu.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityFailures, valueAndGrads, webgpuAgainstNative } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

/** y, d/dgate and d/dup of sum(y * c) (c fixed) through fusedSwiGlu. */
function swiGluAndGrads(shape: number[]) {
  const n = shape.reduce((a, b) => a * b, 1);
  const g = tf.tensor(randomValues(n, 3, 4), shape);
  const u = tf.tensor(randomValues(n, 5, 2), shape);
  const { y, grads } = valueAndGrads((gi, ui) => fusedSwiGlu(gi!, ui!), [g, u]);
  return { y, dgate: grads[0]!, dup: grads[1]! };
}

describe.skipIf(!gpu.ok || !native.ok)('WGSL SwiGLU on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([[[3, 70]], [[2, 5, 40]], [[130, 600]]])(
    'shape %j: y, d/dgate, d/dup equal the native kernel within 1e-4',
    async (shape) => {
      const { errors, shaderKeys } = await webgpuAgainstNative(() => swiGluAndGrads(shape));
      expect(Object.keys(errors)).toEqual(['y', 'dgate', 'dup']);
      expect(parityFailures(errors)).toBe('');
      for (const key of ['rl2SwiGlu', 'rl2SwiGluDg', 'rl2SwiGluDu'])
        expect(shaderKeys.includes(key), key).toBe(true);
    },
    120_000,
  );
});
