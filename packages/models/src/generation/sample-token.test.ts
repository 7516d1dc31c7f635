import { describe, expect, it } from 'vitest';
import { SeededRng } from '@rl2/data';
import { sampleRows, sampleToken } from './sample-token.js';

// probabilities 0.5, 0.25, 0.15, 0.1 at temperature 1
const P = [0.5, 0.25, 0.15, 0.1];
const LOGITS = Float32Array.from(P.map((p) => Math.log(p) + 3));

function histogram(params: Parameters<typeof sampleToken>[1], n = 20000) {
  const rng = new SeededRng(1);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[sampleToken(LOGITS, params, rng).token]! += 1;
  return counts.map((c) => c / n);
}

describe('sampleToken', () => {
  it('greedy takes the argmax and reports its log-softmax', () => {
    const r = sampleToken(LOGITS, { temperature: 0 }, new SeededRng(0));
    expect(r.token).toBe(0);
    expect(r.logprob).toBeCloseTo(Math.log(0.5), 5);
  });

  it('temperature 1 samples the softmax', () => {
    histogram({}).forEach((f, i) => {
      expect(Math.abs(f - P[i]!)).toBeLessThan(0.015);
    });
  });

  it('temperature 0.5 samples p^2 / sum p^2 and reports that logprob', () => {
    const z = P.reduce((a, p) => a + p * p, 0);
    histogram({ temperature: 0.5 }).forEach((f, i) => {
      expect(Math.abs(f - (P[i]! * P[i]!) / z)).toBeLessThan(0.015);
    });
    const r = sampleToken(LOGITS, { temperature: 0.5 }, new SeededRng(3));
    expect(r.logprob).toBeCloseTo(Math.log((P[r.token]! * P[r.token]!) / z), 5);
  });

  it('top-k and top-p renormalise over the kept tokens', () => {
    const k2 = histogram({ topK: 2 });
    expect(k2[2]! + k2[3]!).toBe(0);
    expect(Math.abs(k2[0]! - 2 / 3)).toBeLessThan(0.015);
    // top-p 0.7: 0.5 < 0.7, 0.5 + 0.25 >= 0.7 -> keep tokens 0 and 1
    const p7 = histogram({ topP: 0.7 });
    expect(p7[2]! + p7[3]!).toBe(0);
    expect(histogram({ topP: 0.4 })[0]).toBe(1);
  });

  it('top-p over a long tail of unlikely tokens keeps only the nucleus', () => {
    const logits = new Float32Array(5000).fill(-30);
    logits.set([2, 1, 0.5], 100);
    const rng = new SeededRng(2);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++)
      seen.add(sampleToken(logits, { topP: 0.8, topK: 100 }, rng).token);
    // p = 0.63, 0.23, 0.14: mass 0.63 < 0.8 <= 0.86 -> tokens 100 and 101
    expect([...seen].sort()).toEqual([100, 101]);
  });

  it('the same seed gives the same stream', () => {
    const a = new SeededRng(9);
    const b = new SeededRng(9);
    for (let i = 0; i < 5; i++) expect(a.next()).toBe(b.next());
  });
});

describe('sampleRows (batched, native where available)', () => {
  it('gives sampleToken tokens and logprobs row by row, with top-k/top-p/top-logprob rows mixed in', async () => {
    const { initEngine } = await import('@rl2/engine');
    const { nativeForTests } = await import('@rl2/engine/testing');
    await initEngine({
      backend: nativeForTests().ok ? 'native' : 'cpu',
      threads: 2,
      logger: () => {},
      env: {},
    });
    const v = 500;
    const rows = 6;
    const logits = Float32Array.from({ length: rows * v }, (_, i) => Math.sin(i * 0.37) * 4);
    const params = [
      {},
      { temperature: 0 },
      { temperature: 0.7 },
      { topK: 5 },
      { topP: 0.9 },
      { temperature: 1.3 },
    ];
    const top = [0, 0, 0, 0, 0, 3];
    for (let seed = 0; seed < 20; seed++) {
      const got = sampleRows(
        logits,
        params,
        params.map((_, i) => new SeededRng(seed * 10 + i)),
        top,
        [false, false, false, false, false, false],
      );
      params.forEach((p, i) => {
        const want = sampleToken(
          logits.subarray(i * v, (i + 1) * v),
          p,
          new SeededRng(seed * 10 + i),
          top[i],
        );
        expect(got[i]!.token, `seed ${seed} row ${i}`).toBe(want.token);
        expect(Math.abs(got[i]!.logprob - want.logprob)).toBeLessThan(1e-5);
        expect(got[i]!.top).toEqual(want.top);
      });
    }
    expect(
      sampleRows(
        logits.subarray(0, 2 * v),
        [{}, {}],
        [new SeededRng(1), new SeededRng(2)],
        [],
        [true, false],
      )[0],
    ).toBeUndefined();
  });
});
