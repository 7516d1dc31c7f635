import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { closeness, randomSpec } from '../testing/index.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { fusedAttention } from './fused-attention.js';
import { flashAttention } from './fused-flash-attention.js';

// The tiled kernel against the one-call attention with the equivalent explicit mask (itself
// checked against the composite ops in @rl2/models), forward and q/k/v gradients, over
// lengths that are not a multiple of the tile (64) and packed segments.
const hasNative = nativeForTests().ok;

function maskOf(seg: readonly (readonly number[])[]): tf.Tensor3D {
  const b = seg.length;
  const t = seg[0]!.length;
  const m = new Float32Array(b * t * t);
  for (let r = 0; r < b; r++)
    for (let i = 0; i < t; i++)
      for (let j = 0; j < t; j++)
        m[(r * t + i) * t + j] = j <= i && seg[r]![j] === seg[r]![i] ? 0 : -1e9;
  return tf.tensor3d(m, [b, t, t]);
}

describe.skipIf(!hasNative)('flashAttention', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  const run = (t: number, n: number) => Array.from({ length: t }, (_, i) => Math.floor(i / n));
  it.each([
    [
      'causal, T 150 (tiles of 64 and a ragged last one), 4 query heads over 2 kv heads',
      150,
      2,
      [new Array(150).fill(0), new Array(150).fill(3)],
    ],
    [
      'causal, T 20 (one partial tile), 4 heads over 1 kv head',
      20,
      1,
      [new Array(20).fill(0), new Array(20).fill(0)],
    ],
    [
      'left padding (segment -1) then two sequences, and a row packed in runs of 40, T 130, 4 heads over 4',
      130,
      4,
      [Array.from({ length: 130 }, (_, i) => (i < 5 ? -1 : i < 70 ? 0 : 1)), run(130, 40)],
    ],
    [
      'a segment id that comes back after another (not contiguous), T 100',
      100,
      2,
      [Array.from({ length: 100 }, (_, i) => (i < 30 || i >= 70 ? 1 : 2)), run(100, 1)],
    ],
  ] as const)('%s: equals masked attention, forward and gradients', (_, t, nKv, seg) => {
    const [b, nH, d] = [2, 4, 8];
    const q = tf.tensor4d(randomSpec([b, t, nH, d], 1, 2).values, [b, t, nH, d]);
    const k = tf.tensor4d(randomSpec([b, nKv, t, d], 2, 2).values, [b, nKv, t, d]);
    const v = tf.tensor4d(randomSpec([b, nKv, t, d], 3).values, [b, nKv, t, d]);
    const w = tf.tensor2d(randomSpec([b * t, nH * d], 4).values, [b * t, nH * d]);
    const segT = tf.tensor2d(seg.flat(), [b, t], 'int32');
    const mask = maskOf(seg);
    const loss =
      (f: (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) => tf.Tensor2D) =>
      (a: tf.Tensor, c: tf.Tensor, e: tf.Tensor) =>
        tf.sum(tf.mul(f(a as tf.Tensor4D, c as tf.Tensor4D, e as tf.Tensor4D), w)) as tf.Scalar;
    const flash = (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) =>
      flashAttention(a, c, e, segT)!;
    const ref = (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) => fusedAttention(a, c, e, mask)!;
    const got = [flash(q, k, v), ...tf.grads(loss(flash))([q, k, v])];
    const want = [ref(q, k, v), ...tf.grads(loss(ref))([q, k, v])];
    got.forEach((g, i) => {
      expect(g.shape).toEqual(want[i]!.shape);
      expect(
        closeness(g.dataSync() as Float32Array, want[i]!.dataSync() as Float32Array, 1e-5, 1e-4),
        `output ${i}`,
      ).toBeLessThanOrEqual(1);
    });
    tf.dispose([q, k, v, w, segT, mask, ...got, ...want]);
  });

  it('query positions (a context-parallel rank: two chunks of each row over all its keys) equal masked attention, forward and gradients', () => {
    // rows of 150 keys, cp 2 with zigzag chunks of 37/38: this rank holds chunks 1 and 2, a
    // second row packs two sequences (segments 0 | 1 from key 90) and ends in 10 padding keys
    const [b, tk, nH, nKv, d] = [2, 150, 4, 2, 8];
    const positions = [
      [
        ...Array.from({ length: 38 }, (_, i) => 37 + i),
        ...Array.from({ length: 37 }, (_, i) => 75 + i),
      ],
      [
        ...Array.from({ length: 38 }, (_, i) => 100 + i),
        ...Array.from({ length: 37 }, (_, i) => 5 + i),
      ],
    ];
    const seg = [
      new Array<number>(tk).fill(0),
      Array.from({ length: tk }, (_, j) => (j < 90 ? 0 : j < 140 ? 1 : -1)),
    ];
    const tq = positions[0]!.length;
    const q = tf.tensor4d(randomSpec([b, tq, nH, d], 1, 2).values, [b, tq, nH, d]);
    const k = tf.tensor4d(randomSpec([b, nKv, tk, d], 2, 2).values, [b, nKv, tk, d]);
    const v = tf.tensor4d(randomSpec([b, nKv, tk, d], 3).values, [b, nKv, tk, d]);
    const w = tf.tensor2d(randomSpec([b * tq, nH * d], 4).values, [b * tq, nH * d]);
    const segT = tf.tensor2d(seg.flat(), [b, tk], 'int32');
    const posT = tf.tensor2d(positions.flat(), [b, tq], 'int32');
    const m = new Float32Array(b * tq * tk);
    for (let r = 0; r < b; r++)
      for (let i = 0; i < tq; i++) {
        const at = positions[r]![i]!;
        for (let j = 0; j < tk; j++)
          m[(r * tq + i) * tk + j] = j <= at && seg[r]![j] === seg[r]![at] ? 0 : -1e9;
      }
    const mask = tf.tensor3d(m, [b, tq, tk]);
    const loss =
      (f: (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) => tf.Tensor2D) =>
      (a: tf.Tensor, c: tf.Tensor, e: tf.Tensor) =>
        tf.sum(tf.mul(f(a as tf.Tensor4D, c as tf.Tensor4D, e as tf.Tensor4D), w)) as tf.Scalar;
    const flash = (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) =>
      flashAttention(a, c, e, segT, posT)!;
    const ref = (a: tf.Tensor4D, c: tf.Tensor4D, e: tf.Tensor4D) => fusedAttention(a, c, e, mask)!;
    const got = [flash(q, k, v), ...tf.grads(loss(flash))([q, k, v])];
    const want = [ref(q, k, v), ...tf.grads(loss(ref))([q, k, v])];
    got.forEach((g, i) => {
      expect(g.shape).toEqual(want[i]!.shape);
      expect(
        closeness(g.dataSync() as Float32Array, want[i]!.dataSync() as Float32Array, 1e-5, 1e-4),
        `output ${i}`,
      ).toBeLessThanOrEqual(1);
    });
    tf.dispose([q, k, v, w, segT, posT, mask, ...got, ...want]);
  });
});
