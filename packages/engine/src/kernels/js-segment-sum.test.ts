import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs'; // gradient functions (tfjs-core's Node build registers none)
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { useJsSegmentSum } from './js-segment-sum.js';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('UnsortedSegmentSum in JS for the cpu backend', () => {
  it('sums rows by segment (out-of-range ids dropped) exactly as the stock kernel, 2D and 3D', () => {
    const x = tf.tensor3d(
      Array.from({ length: 5 * 3 * 2 }, (_, i) => Math.sin(i) * 3),
      [5, 3, 2],
    );
    const ids = tf.tensor1d([2, 0, 2, 7, 1], 'int32');
    const stock = [
      tf.unsortedSegmentSum(x, ids, 4),
      tf.unsortedSegmentSum(tf.reshape(x, [5, 6]), ids, 3),
    ].map((t) => [...t.dataSync()]);
    useJsSegmentSum('cpu');
    const mine = [
      tf.unsortedSegmentSum(x, ids, 4),
      tf.unsortedSegmentSum(tf.reshape(x, [5, 6]), ids, 3),
    ];
    expect(mine[0]!.shape).toEqual([4, 3, 2]);
    mine.forEach((t, k) => {
      const want = stock[k] as number[];
      [...t.dataSync()].forEach((v, i) => {
        expect(v).toBeCloseTo(want[i] as number, 5);
      });
    });
    // by hand: segment 2 = rows 0 + 2, segment 3 gets nothing, id 7 is out of range
    const by = x.arraySync();
    const seg2 = (mine[0]!.arraySync() as number[][][])[2]!;
    by[0]!.forEach((r, i) => {
      r.forEach((v, j) => {
        expect(seg2[i]![j]).toBeCloseTo(v + (by[2]![i]![j] as number), 5);
      });
    });
    expect((mine[0]!.arraySync() as number[][][])[3]).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
  });

  it('is what the gather gradient uses: d(sum of gathered rows)/d table counts each row', () => {
    useJsSegmentSum('cpu');
    const table = tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2]);
    const g = tf.grad((t: tf.Tensor) => tf.sum(tf.gather(t, tf.tensor1d([2, 0, 2], 'int32'))))(
      table,
    );
    expect([...g.dataSync()]).toEqual([1, 1, 0, 0, 2, 2]);
  });
});
