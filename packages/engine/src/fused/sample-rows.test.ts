import { beforeAll, describe, expect, it } from 'vitest';
import { decodeKernels } from './fused-decode.js';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';

// The batched sampler against hand-derived inverse CDFs: logits [0, ln 3] give p = [1/4, 3/4].
const hasNative = nativeForTests().ok;

describe.skipIf(!hasNative)('sampleRows', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  it('inverse CDF at u per row, temperature scaling, greedy at 0 and NaN rows left alone', () => {
    const k = decodeKernels()!;
    const ln3 = Math.log(3);
    // rows: T 1 at u .2 and .3; [0, ln 9] at T 2 (= [0, ln 3] at T 1) at u .26; greedy; skipped
    const logits = Float32Array.of(0, ln3, 0, ln3, 0, 2 * ln3, 5, -1, 0, 0);
    const temperature = Float64Array.of(1, 1, 2, 0, Number.NaN);
    const u = Float64Array.of(0.2, 0.3, 0.26, 0.99, 0.5);
    const tokens = Int32Array.of(-1, -1, -1, -1, 77);
    const logprobs = new Float64Array(5).fill(42);
    k.sampleRows(logits, 5, 2, temperature, u, tokens, logprobs);
    expect([...tokens]).toEqual([0, 1, 1, 0, 77]);
    const want = [Math.log(0.25), Math.log(0.75), Math.log(0.75), -Math.log1p(Math.exp(-6)), 42];
    want.forEach((w, i) => {
      expect(logprobs[i]).toBeCloseTo(w, 6);
    });
  });

  it('draws tokens with their probabilities over a 1000-entry vocabulary', () => {
    const k = decodeKernels()!;
    const v = 1000;
    const logits = Float32Array.from({ length: v }, (_, i) => Math.sin(i) * 3);
    const p = Array.from(logits, (l) => Math.exp(l));
    const z = p.reduce((a, b) => a + b, 0);
    const cdf: number[] = [];
    let run = 0;
    for (const x of p) {
      run += x;
      cdf.push(run / z);
    }
    const us = [0.001, 0.25, 0.5, 0.75, 0.999];
    const tokens = new Int32Array(us.length);
    const logprobs = new Float64Array(us.length);
    k.sampleRows(
      new Float32Array(us.flatMap(() => [...logits])),
      us.length,
      v,
      new Float64Array(us.length).fill(1),
      Float64Array.from(us),
      tokens,
      logprobs,
    );
    us.forEach((u, r) => {
      const want = cdf.findIndex((c) => c > u);
      expect(tokens[r]).toBe(want);
      expect(logprobs[r]).toBeCloseTo(Math.log(p[want]! / z), 5);
    });
  });

  it('a batch over the threads (2^20 logits and more) draws what each row draws alone', () => {
    const k = decodeKernels()!;
    const [rows, v] = [12, 100_000];
    const logits = Float32Array.from({ length: rows * v }, (_, i) => Math.sin(i * 0.37) * 4);
    const temperature = Float64Array.from({ length: rows }, (_, r) => [0, 0.7, 1, 1.3][r % 4]!);
    temperature[5] = Number.NaN;
    const u = Float64Array.from({ length: rows }, (_, r) => (r + 0.5) / rows);
    const tokens = new Int32Array(rows).fill(-7);
    const logprobs = new Float64Array(rows).fill(9);
    k.sampleRows(logits, rows, v, temperature, u, tokens, logprobs);
    for (let r = 0; r < rows; r++) {
      const one = Int32Array.of(-7);
      const lp = Float64Array.of(9);
      const row = logits.subarray(r * v, (r + 1) * v);
      k.sampleRows(row, 1, v, temperature.subarray(r, r + 1), u.subarray(r, r + 1), one, lp);
      expect([tokens[r], logprobs[r]]).toEqual([one[0], lp[0]]);
    }
    expect(tokens[5]).toBe(-7); // the NaN row is left alone in the threaded path too
  });
});
