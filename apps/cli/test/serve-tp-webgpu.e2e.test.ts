// `rl2 serve --tp 2` on the webgpu backend (CI: Mesa's lavapipe): two ranks, each on its own
// adapter with half the weights, answer over HTTP with the tokens of `rl2 serve` on one native
// process (greedy over both APIs, seeded samples), also after both reload other weights.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { webgpuForTests } from '@rl2/engine/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  expectSame,
  generateAll,
  post,
  startServe,
  stopServe,
  tinyModels,
} from './serve-tp-helpers.js';

const gpu = webgpuForTests();
// webgpu's float32 kernels and the row-parallel all-reduce sum in another order than native's
const TOL = 1e-5;

/** Seeded top-k, top-p and plain samples in one batch: vocab-parallel sampling draws native's tokens. */
async function sampled(url: string): Promise<number[][]> {
  const { status, body } = await post(url, '/generate', {
    input_ids: [
      [1, 20, 21, 22, 23],
      [1, 30],
      [3, 12, 33, 2, 31, 20, 7, 7],
    ],
    sampling_params: [
      { temperature: 0.8, top_k: 10, max_new_tokens: 5, ignore_eos: true, sampling_seed: 4 },
      { temperature: 0.8, top_p: 0.9, max_new_tokens: 5, ignore_eos: true, sampling_seed: 5 },
      { temperature: 1, max_new_tokens: 6, ignore_eos: true, sampling_seed: 9 },
    ],
  });
  expect(status).toBe(200);
  return (body as unknown as { output_ids: number[] }[]).map((o) => o.output_ids);
}

const servers: ReturnType<typeof startServe>[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await stopServe(s);
});

describe.skipIf(!gpu.ok)('rl2 serve --tp 2 on webgpu', () => {
  it("2 webgpu ranks (each naming its adapter) answer with one native process's tokens and log-probs (1e-5), also after a weight reload; SIGTERM stops both", async () => {
    const [m0, m1] = await tinyModels('serve-tp-webgpu');
    try {
      const one = startServe(m0, 1, { RL2_BACKEND: 'native' });
      const two = startServe(m0, 2, { RL2_BACKEND: 'webgpu' });
      servers.push(one, two);
      const [urlOne, urlTwo] = await Promise.all([one.ready, two.ready]);
      expect(one.output().stdout).toMatch(/^rl2 engine: backend native/m);
      // asked for webgpu: the lead and the follower each started an adapter (no fallback)
      expect(two.output().stdout).toMatch(/^rl2 engine: backend webgpu, adapter /m);
      expect(two.output().stderr).toMatch(/^\[rank 1\] rl2 engine: backend webgpu, adapter /m);
      expect(two.output().stdout).toContain('tensor parallel over 2 ranks');

      expectSame(await generateAll(urlTwo), await generateAll(urlOne), TOL);
      expect(await sampled(urlTwo)).toEqual(await sampled(urlOne));
      // both ranks load their shards of m1 (with only the lead's, the tokens would differ)
      for (const url of [urlOne, urlTwo])
        expect((await post(url, '/update_weights_from_disk', { model_path: m1 })).status).toBe(200);
      expectSame(await generateAll(urlTwo), await generateAll(urlOne), TOL);

      two.child.kill('SIGTERM');
      expect(await two.exited, two.output().stderr).toBe(0);
      expect(two.output().stdout).toContain('stopped');
      expect(two.output().stderr).not.toMatch(/OffscreenCanvas/);
    } finally {
      rmSync(dirname(m0), { recursive: true, force: true });
    }
  }, 150_000);
});
