import { join } from 'node:path';
import { launch } from '@rl2/parallel';
import { describe, expect, it } from 'vitest';
import { freePort } from './rank-runs.js';

interface Generated {
  outputIds: number[];
  logprobs: number[];
  finishReason: unknown;
  topLogprobs?: { id: number; logprob: number }[][];
}
interface Result {
  ref: Generated[];
  tp: Generated[];
  fullBytes: number;
  shardBytes: number[];
}

async function generateOnRanks(family: string, tp: number): Promise<Result> {
  const results: Result[] = [];
  const errors: string[] = [];
  const ranks = join(import.meta.dirname, 'ranks');
  await launch({
    nprocPerNode: tp,
    masterPort: await freePort(),
    output: 'silent',
    killGraceMs: 2000,
    command: [
      process.execPath,
      '--import',
      'tsx',
      '--import',
      join(ranks, 'register-source.mjs'),
      join(ranks, 'tp-generate.rank.ts'),
    ],
    env: { FAMILY: family },
    onOutput: (_rank, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)) as Result);
      else if (stream === 'stderr') errors.push(line);
    },
  }).catch((e: Error) => {
    throw new Error(`${e.message}\n${errors.join('\n')}`);
  });
  expect(results).toHaveLength(1);
  return results[0] as Result;
}

// logits differ from the one-process ones by float32 summation order (row-parallel all-reduce)
const TOL = 1e-5;

describe('tensor-parallel generation equals one-process generation', () => {
  for (const family of ['qwen3', 'llama']) {
    it(`${family} TP(2): 7 concurrent requests on a 3-row batch (greedy, temperature, top-k, ` +
      `top-p + top logprobs): same tokens, logprobs within ${TOL}, half the parameters per rank`, async () => {
      const { ref, tp, fullBytes, shardBytes } = await generateOnRanks(family, 2);
      expect(tp).toHaveLength(ref.length);
      ref.forEach((want, i) => {
        const got = tp[i] as Generated;
        expect(got.outputIds, `request ${i}`).toEqual(want.outputIds);
        expect(got.finishReason).toEqual(want.finishReason);
        got.logprobs.forEach((lp, t) =>
          expect(
            Math.abs(lp - (want.logprobs[t] as number)),
            `request ${i} token ${t}`,
          ).toBeLessThan(TOL),
        );
        if (want.topLogprobs)
          expect(got.topLogprobs?.map((s) => s.map((x) => x.id))).toEqual(
            want.topLogprobs.map((s) => s.map((x) => x.id)),
          );
      });
      // every projection, the embedding and the LM head are split; only the norms stay whole
      for (const b of shardBytes) expect(b / fullBytes).toBeLessThan(0.52);
    }, 60_000);
  }
});
