import { launch } from '@rl2/parallel';
import { describe, expect, it } from 'vitest';
import { freePort, rankCommand } from './rank-runs.js';

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
  await launch({
    nprocPerNode: tp,
    masterPort: await freePort(),
    output: 'silent',
    killGraceMs: 2000,
    command: rankCommand('tp-generate.rank.ts'),
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
        got.logprobs.forEach((lp, t) => {
          expect(
            Math.abs(lp - (want.logprobs[t] as number)),
            `request ${i} token ${t}`,
          ).toBeLessThan(TOL);
        });
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

describe('a tensor-parallel group whose lead throws inside a forward', () => {
  it('fails clearly: the request gets the error, later ones GROUP_OUT_OF_STEP without touching the collectives, and the follower stuck in the forward fails once the lead exits', async () => {
    const results: { first: string; second: string; broken?: string }[] = [];
    const stderr: string[] = [];
    const started = Date.now();
    const outcome = await launch({
      nprocPerNode: 2,
      masterPort: await freePort(),
      output: 'silent',
      killGraceMs: 2000,
      command: rankCommand('tp-generate-fault.rank.ts'),
      // the backstop if the follower did not notice the lead exit
      env: { RL2_COLLECTIVE_TIMEOUT_MS: '20000' },
      onOutput: (_rank, stream, line) => {
        if (stream === 'stdout' && line.startsWith('RESULT '))
          results.push(JSON.parse(line.slice(7)));
        else if (stream === 'stderr') stderr.push(line);
      },
    }).then(
      () => 'all exited 0',
      (e: Error) => e.message,
    );
    expect(results, stderr.join('\n')).toHaveLength(1);
    const { first, second, broken } = results[0]!;
    expect(first).toContain('injected fault in down_proj');
    expect(broken).toBe('injected fault in down_proj');
    expect(second).toMatch(/^GROUP_OUT_OF_STEP .*out of step.*injected fault in down_proj/);
    // rank 1 was inside the all-reduce of the faulty forward: it fails on the lost lead, well
    // before the collective timeout
    expect(outcome).toMatch(/rank 1 failed/);
    expect(outcome).toMatch(/PEER_LOST|closed|reset|lost/i);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 90_000);
});
