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
});
