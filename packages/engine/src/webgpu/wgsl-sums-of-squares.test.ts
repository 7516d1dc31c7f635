// The WGSL sums of squares on the webgpu backend (CI: Mesa's lavapipe) against a float64 sum of
// the same float32 values, through `weightedSumOfSquares` (a gradient norm's squared total):
// each tensor alone and a weighted total within 1e-4 relative (sizes that are not multiples of
// the workgroup, one long enough for every workgroup to stride), with the WGSL reduction (not
// square and sum per tensor) doing the work, and no tensor left behind.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { weightedSumOfSquares } from '../fused/sum-of-squares.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { recordShaderKeys } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();

const SHAPES = [[1], [5, 3], [0], [1000], [7, 131, 3], [300_007], [2 ** 21 + 13]];
const WEIGHTS = [1, 0.5, 3, 2, 0.25, 1.5, 0.75];

/** sum(x^2) in float64 over float32 values. */
const reference = (x: Float32Array) => x.reduce((s, v) => s + v * v, 0);

const relative = (got: number, want: number) => Math.abs(got - want) / want;

describe.skipIf(!gpu.ok)('WGSL sums of squares on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('each tensor and the weighted total equal a float64 sum within 1e-4, in the WGSL reduction', async () => {
    await initEngine({ backend: 'webgpu', threads: 1, env: {}, logger: () => {} });
    const values = SHAPES.map((s, i) =>
      randomValues(
        s.reduce((a, b) => a * b, 1),
        20 + i,
        1 + i,
      ),
    );
    const tensors = SHAPES.map((s, i) => tf.tensor(values[i]!, s));
    const before = tf.memory().numTensors;
    const recording = recordShaderKeys();
    const total = await weightedSumOfSquares(tensors, WEIGHTS);
    recording.stop();
    const each = await Promise.all(tensors.map((t) => weightedSumOfSquares([t])));
    expect(tf.memory().numTensors, 'tensors left behind').toBe(before);
    tf.dispose(tensors);

    expect(recording.keys, 'square and sum per tensor ran').toEqual([
      'fill',
      'rl2SumsOfSquaresRows',
    ]);
    const want = values.map(reference);
    each.forEach((got, i) => {
      if (want[i] === 0) expect(got).toBe(0);
      else
        expect(relative(got, want[i]!), `shape ${SHAPES[i]}: ${got} vs ${want[i]}`).toBeLessThan(
          1e-4,
        );
    });
    const wantTotal = want.reduce((s, v, i) => s + v * WEIGHTS[i]!, 0);
    expect(relative(total, wantTotal), `${total} vs ${wantTotal}`).toBeLessThan(1e-4);
  }, 120_000);
});
