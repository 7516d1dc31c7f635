import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import { bf16Bits, bf16Value, f16Bits, f16Value, values } from '../testing/sixteen-bit-values.js';
import { type FrozenMatrix, frozenLinear, frozenRows } from './frozen-linear.js';

// The frozen 16-bit product (native/frozen-linear.c) and its input gradient against float64
// sums written here over the bfloat16 / float16 values: few rows (the skinny forward), many rows
// (sgemm over widened tiles), and a W of three tiles (512 rows of 2048, the last short).
const hasNative = nativeForTests().ok;

function matrixOf(dtype: 'bfloat16' | 'float16', out: number, inF: number, seed: number) {
  const f = values(out * inF, seed);
  const bits =
    dtype === 'bfloat16'
      ? Uint16Array.from(f, bf16Bits)
      : Uint16Array.from(f, (v) => f16Bits(Math.round(v * 1024) / 1024));
  const w: FrozenMatrix = { bits, dtype, shape: [out, inF] };
  return { w, vals: Float64Array.from(bits, dtype === 'bfloat16' ? bf16Value : f16Value) };
}

/** Largest |a - b| over the largest |b| (float32 sums of thousands of terms round near 1e-7 of them). */
function relErr(a: ArrayLike<number>, b: Float64Array): number {
  let m = 0;
  let top = 0;
  for (let i = 0; i < b.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    top = Math.max(top, Math.abs(b[i]!));
  }
  return m / top;
}

describe.skipIf(!hasNative)('frozenLinear', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  const cases: ['bfloat16' | 'float16', number, number, number][] = [
    ['bfloat16', 3, 37, 9],
    ['bfloat16', 65, 130, 67],
    ['float16', 70, 96, 33],
    ['bfloat16', 67, 2048, 1100],
  ];
  it.each(cases)(
    '%s: rows %i, in %i, out %i: y and dx within 1e-5 of float64',
    (dtype, rows, inF, out) => {
      const { w, vals } = matrixOf(dtype, out, inF, out + 7);
      const xv = values(rows * inF, rows);
      const gv = values(rows * out, rows + 1);
      const x = tf.tensor2d(xv, [rows, inF]);
      const g = tf.tensor2d(gv, [rows, out]);
      const { value, grads } = tf.valueAndGrads((xi: tf.Tensor) =>
        tf.sum(tf.mul(frozenLinear(xi as tf.Tensor2D, w), g)),
      )([x]);
      const y = frozenLinear(x, w).dataSync();
      const yRef = new Float64Array(rows * out);
      const dxRef = new Float64Array(rows * inF);
      for (let r = 0; r < rows; r++)
        for (let j = 0; j < out; j++) {
          let s = 0;
          for (let k = 0; k < inF; k++) s += xv[r * inF + k]! * vals[j * inF + k]!;
          yRef[r * out + j] = s;
          const gj = gv[r * out + j]!;
          for (let k = 0; k < inF; k++) dxRef[r * inF + k]! += gj * vals[j * inF + k]!;
        }
      expect(relErr(y, yRef)).toBeLessThan(1e-5);
      expect(relErr(grads[0]!.dataSync(), dxRef)).toBeLessThan(1e-5);
      expect(value.dataSync()[0]).toBeCloseTo(
        yRef.reduce((a, v, i) => a + v * gv[i]!, 0),
        0,
      );
      tf.dispose([x, g, value, ...grads]);
    },
  );

  it('a row view of W (an LM head chunk) multiplies by those rows only', () => {
    const { w, vals } = matrixOf('bfloat16', 20, 24, 3);
    const xv = values(2 * 24, 5);
    const y = frozenLinear(tf.tensor2d(xv, [2, 24]), frozenRows(w, 8, 5)).dataSync();
    const ref = new Float64Array(10);
    for (let r = 0; r < 2; r++)
      for (let j = 0; j < 5; j++)
        for (let k = 0; k < 24; k++) ref[r * 5 + j]! += xv[r * 24 + k]! * vals[(8 + j) * 24 + k]!;
    expect(relErr(y, ref)).toBeLessThan(1e-5);
  });
});
