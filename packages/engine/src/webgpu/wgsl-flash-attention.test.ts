// The WGSL tiled attention on the webgpu backend (CI: Mesa's lavapipe) against the native
// backend's tiled kernel (itself checked against masked attention: flash-attention.test.ts):
// output and q/k/v gradients within 1e-4 of the largest value, over ragged tiles, grouped-query
// heads, packed and non-contiguous segments, left padding, query positions (a context-parallel
// rank) and head sizes that change the tile; the WGSL programs do the work, and a long row
// needs no [T, T] buffer.
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { flashAttention } from '../fused/fused-flash-attention.js';
import { initEngine } from '../init-engine.js';
import { randomValues } from '../testing/backend-check.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { parityFailures, valueAndGrads, webgpuAgainstNative } from '../testing/webgpu-parity.js';
import { webgpuForTests } from '../testing/webgpu-for-tests.js';

const gpu = webgpuForTests();
const native = nativeForTests();

interface Case {
  nH: number;
  nKv: number;
  d: number;
  /** Segment ids of each row's keys. */
  seg: number[][];
  /** Key positions of each row's queries (absent: every key is a query). */
  positions?: number[][];
}

/** y, dq, dk, dv of sum(y * c) (c fixed) through flashAttention. */
function attentionAndGrads({ nH, nKv, d, seg, positions }: Case) {
  const [b, tk] = [seg.length, seg[0]!.length];
  const tq = positions ? positions[0]!.length : tk;
  const q = tf.tensor4d(randomValues(b * tq * nH * d, 1, 2), [b, tq, nH, d]);
  const k = tf.tensor4d(randomValues(b * nKv * tk * d, 2, 2), [b, nKv, tk, d]);
  const v = tf.tensor4d(randomValues(b * nKv * tk * d, 3), [b, nKv, tk, d]);
  const segT = tf.tensor2d(seg.flat(), [b, tk], 'int32');
  const posT = positions ? tf.tensor2d(positions.flat(), [b, tq], 'int32') : undefined;
  const attend = (qi?: tf.Tensor, ki?: tf.Tensor, vi?: tf.Tensor) =>
    flashAttention(qi as tf.Tensor4D, ki as tf.Tensor4D, vi as tf.Tensor4D, segT, posT);
  const { y, grads } = valueAndGrads(attend, [q, k, v]);
  return { y, dq: grads[0]!, dk: grads[1]!, dv: grads[2]! };
}

const runs = (t: number, n: number) => Array.from({ length: t }, (_, i) => Math.floor(i / n));
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

const CASES: [string, Case][] = [
  [
    'causal, T 70 (a block of 64 and a ragged one), 4 query heads over 2 kv heads',
    { nH: 4, nKv: 2, d: 8, seg: [new Array(70).fill(0), new Array(70).fill(3)] },
  ],
  [
    'left padding then two sequences; runs of 9; a segment id that comes back, T 100, 2 heads over 1',
    {
      nH: 2,
      nKv: 1,
      d: 8,
      seg: [
        Array.from({ length: 100 }, (_, i) => (i < 5 ? -1 : i < 60 ? 0 : 1)),
        runs(100, 9),
        Array.from({ length: 100 }, (_, i) => (i < 30 || i >= 70 ? 1 : 2)),
      ],
    },
  ],
  [
    'query positions: two chunks of each row of 90 keys, the second row two sequences and padding',
    {
      nH: 4,
      nKv: 2,
      d: 8,
      seg: [
        new Array(90).fill(0),
        Array.from({ length: 90 }, (_, j) => (j < 50 ? 0 : j < 80 ? 1 : -1)),
      ],
      positions: [
        [...range(22, 23), ...range(45, 22)],
        [...range(60, 23), ...range(3, 22)],
      ],
    },
  ],
  // (each head size is a pipeline to compile: a cold lavapipe takes seconds a shader)
  [
    'head size 128 (tiles of fewer keys), T 75, 2 heads over 1',
    { nH: 2, nKv: 1, d: 128, seg: [runs(75, 50)] },
  ],
];

describe.skipIf(!gpu.ok || !native.ok)('WGSL tiled attention on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each(CASES)(
    '%s: y, dq, dk, dv equal the native kernel within 1e-4',
    async (_, c) => {
      const { errors, shaderKeys } = await webgpuAgainstNative(() => attentionAndGrads(c));
      expect(Object.keys(errors)).toEqual(['y', 'dq', 'dk', 'dv']);
      expect(parityFailures(errors)).toBe('');
      for (const key of [
        'rl2FlashAttention_',
        'rl2FlashAttentionRows_',
        'rl2FlashAttentionDq_',
        'rl2FlashAttentionDkv_',
      ])
        expect(
          shaderKeys.some((k) => k.startsWith(key)),
          key,
        ).toBe(true);
    },
    120_000,
  );
});

interface BufferCounting {
  bufferManager: {
    numBytesUsed: number;
    acquireBuffer: (...args: unknown[]) => unknown;
  };
}

describe.skipIf(!gpu.ok)('WGSL tiled attention memory', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  /** Bytes of GPU buffers held at most while `f` runs (and its result is read), above those held before. */
  async function peakBytes(f: () => tf.Tensor): Promise<number> {
    const manager = (tf.backend() as unknown as BufferCounting).bufferManager;
    const acquire = manager.acquireBuffer;
    const start = manager.numBytesUsed;
    let peak = start;
    manager.acquireBuffer = (...args) => {
      const buffer = acquire.apply(manager, args);
      peak = Math.max(peak, manager.numBytesUsed);
      return buffer;
    };
    const out = f();
    await out.data();
    manager.acquireBuffer = acquire;
    out.dispose();
    return peak - start;
  }

  it('forward and backward of a 1024-token row hold less than one head of [T, T] scores at a time', async () => {
    await initEngine({ backend: 'webgpu', env: {}, logger: () => {} });
    const [t, nH, d] = [1024, 2, 8];
    const q = tf.tensor4d(randomValues(t * nH * d, 1), [1, t, nH, d]);
    const kv = tf.tensor4d(randomValues(t * d, 2), [1, 1, t, d]);
    const seg = tf.zeros([1, t], 'int32') as tf.Tensor2D;
    await Promise.all([q.data(), kv.data(), seg.data()]);
    const attention = await peakBytes(
      () =>
        tf.grads((a: tf.Tensor) => tf.sum(flashAttention(a as tf.Tensor4D, kv, kv, seg)!))([q])[0]!,
    );
    // the measure sees one head's scores where they exist
    const scores = await peakBytes(() =>
      tf.matMul(tf.reshape(kv, [t, d]), tf.reshape(kv, [t, d]), false, true),
    );
    expect(scores).toBeGreaterThanOrEqual(t * t * 4);
    // q, k, v, out, lse, dy, dq and the packed outputs are O(T d): T d nH floats each
    expect(attention).toBeLessThan(t * t * 4);
    expect(attention).toBeGreaterThan(t * nH * d * 4);
    tf.dispose([q, kv, seg]);
  }, 120_000);
});
