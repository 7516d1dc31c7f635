// `rl2 serve` on the webgpu backend (CI: Mesa's lavapipe): the server's generator decodes on the
// device (device KV cache, sampling with tensor ops) and answers with native's greedy tokens and
// seeded samples.
import { rmSync } from 'node:fs';
import { nativeForTests, webgpuForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyCheckpoint } from '../../test/tiny-checkpoint.js';
import { serveModel } from './serve-model.js';

const gpu = webgpuForTests();
const native = nativeForTests();
let dir: string;
beforeAll(async () => {
  dir = await writeTinyCheckpoint(3);
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await tf.setBackend('cpu');
});

const BODY = {
  input_ids: [
    [1, 20, 21, 22, 23],
    [1, 30],
    [1, 30],
  ],
  sampling_params: [
    { temperature: 0, max_new_tokens: 6, ignore_eos: true },
    { temperature: 0.8, top_k: 10, max_new_tokens: 5, ignore_eos: true, sampling_seed: 4 },
    { temperature: 0.8, top_p: 0.9, max_new_tokens: 5, ignore_eos: true, sampling_seed: 5 },
  ],
};

async function served(backend: 'native' | 'webgpu') {
  const lines: string[] = [];
  const server = await serveModel({
    model: dir,
    port: 0,
    backend,
    threads: 1,
    log: (l) => lines.push(l),
  });
  try {
    const res = await fetch(`${server.url}/generate`, {
      method: 'POST',
      body: JSON.stringify(BODY),
    });
    expect(res.status).toBe(200);
    const out = (await res.json()) as { output_ids: number[] }[];
    return { ids: out.map((o) => o.output_ids), backend: tf.getBackend(), lines };
  } finally {
    await server.close();
  }
}

describe.skipIf(!gpu.ok || !native.ok)('rl2 serve on webgpu', () => {
  it('answers /generate with the tokens native gives', async () => {
    const want = await served('native');
    const got = await served('webgpu');
    expect(got.backend).toBe('webgpu');
    expect(got.lines.join('\n')).toMatch(/backend webgpu, adapter/);
    expect(got.ids).toEqual(want.ids);
    expect(got.ids.map((x) => x.length)).toEqual([6, 5, 5]);
  }, 120_000);
});
