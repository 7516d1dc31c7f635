import { SeededRng } from '@rl2/data';
import { initEngine } from '@rl2/engine';
import { randomValues } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SamplingRow } from './batch-stepper.js';
import { sampleOnDevice, unpackSampled } from './device-sampling.js';
import { type SamplingParams, sampleToken } from './sample-token.js';

const V = 50;
const PARAMS: SamplingParams[] = [
  { temperature: 0 },
  { temperature: 1 },
  { temperature: 0.7 },
  { temperature: 1, topK: 5 },
  { temperature: 0.8, topP: 0.6 },
  { temperature: 1.3, topK: 8, topP: 0.9 },
  { temperature: 1, topK: V + 10 },
];

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

/** sampleOnDevice over `logits` [B, V] on the active backend, read back. */
async function onDevice(logits: Float32Array, rows: SamplingRow[]) {
  const t = tf.tensor2d(logits, [rows.length, V]);
  const { packed, n } = sampleOnDevice(t, rows);
  const values = (await packed.data()) as Float32Array;
  tf.dispose([t, packed]);
  return unpackSampled(values, rows, n);
}

describe('sampleOnDevice', () => {
  it('picks sampleToken tokens, logprobs and top logprobs for greedy, temperature, top-k, top-p', async () => {
    let mismatches = 0;
    for (let round = 0; round < 40; round++) {
      const logits = randomValues(PARAMS.length * V, 7 + round, 4);
      const mk = (seed: number): SamplingRow[] =>
        PARAMS.map((params, i) => ({
          params,
          rng: new SeededRng(seed * 100 + i),
          topLogprobs: i % 3,
        }));
      const got = await onDevice(logits, mk(round));
      const want = mk(round).map((row, i) =>
        sampleToken(logits.subarray(i * V, (i + 1) * V), row.params, row.rng, row.topLogprobs),
      );
      got.forEach((g, i) => {
        const w = want[i]!;
        if (g!.token !== w.token) mismatches += 1;
        else expect(Math.abs(g!.logprob - w.logprob)).toBeLessThan(1e-5);
        expect(g!.top?.map((t) => t.id)).toEqual(w.top?.map((t) => t.id));
        g!.top?.forEach((t, j) => {
          expect(Math.abs(t.logprob - w.top![j]!.logprob)).toBeLessThan(1e-5);
        });
      });
    }
    // float32 sums against sampleToken's float64: a draw within ~1e-7 of a boundary may differ
    expect(mismatches).toBe(0);
  });

  it('takes one draw per sampled row, none for greedy or skipped rows, and leaves skipped rows out', async () => {
    const rngs = [new SeededRng(1), new SeededRng(2), new SeededRng(3)];
    const rows: SamplingRow[] = [
      { params: { temperature: 0 }, rng: rngs[0]!, topLogprobs: 0 },
      { params: { temperature: 1, topP: 0.5 }, rng: rngs[1]!, topLogprobs: 0 },
      { params: { temperature: 1 }, rng: rngs[2]!, topLogprobs: 2, skip: true },
    ];
    const got = await onDevice(randomValues(3 * V, 3, 2), rows);
    expect(got[2]).toBeUndefined();
    const next = rngs.map((r) => r.next());
    expect(next).toEqual([
      new SeededRng(1).next(),
      nth(new SeededRng(2), 2),
      new SeededRng(3).next(),
    ]);
  });

  it('keeps only the top-k tokens and the top-p nucleus', async () => {
    // probabilities 0.5, 0.25, 0.15, 0.1, then (almost) nothing
    const row = new Float32Array(V).fill(-1e4);
    [0.5, 0.25, 0.15, 0.1].forEach((p, i) => {
      row[10 + i] = Math.log(p);
    });
    const seen = (params: SamplingParams) => {
      const rows = Array.from({ length: 64 }, (_, i) => ({
        params,
        rng: new SeededRng(i),
        topLogprobs: 0,
      }));
      const logits = new Float32Array(rows.length * V);
      for (let i = 0; i < rows.length; i++) logits.set(row, i * V);
      return onDevice(logits, rows).then((r) => new Set(r.map((s) => s!.token)));
    };
    expect([...(await seen({ topK: 2 }))].sort()).toEqual([10, 11]);
    expect([...(await seen({ topP: 0.7 }))].sort()).toEqual([10, 11]);
    expect([...(await seen({ topP: 0.2 }))]).toEqual([10]);
  });
});

function nth(rng: SeededRng, n: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) x = rng.next();
  return x;
}
