// `rl2 serve --model PATH` end to end: a checkpoint folder served over the SGLang API, then
// swapped with /update_weights_from_disk.
import '@tensorflow/tfjs-backend-cpu';
import { join } from 'node:path';
import { type ModelSpec, initModelCheckpoint } from '@rl2/models';
import { setBackend } from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { startSGLangServer } from '../server/sglang-server.js';
import { loadCheckpointEngine } from './checkpoint-engine.js';
import { createSGLangEngine } from './sglang-engine.js';

const spec: ModelSpec = {
  family: 'llama',
  vocabSize: 40,
  hiddenSize: 16,
  intermediateSize: 32,
  numLayers: 1,
  numHeads: 2,
  initializerRange: 0.5,
};
const dir = tempDir('rl2-serve-');
const first = join(dir, 'step-0');
const second = join(dir, 'step-1');
const wider = join(dir, 'wider-vocab');
const deeper = join(dir, 'two-layers');

beforeAll(async () => {
  await setBackend('cpu');
  await initModelCheckpoint(first, spec, { seed: 1 });
  await initModelCheckpoint(second, spec, { seed: 2 });
  await initModelCheckpoint(wider, { ...spec, vocabSize: 64 }, { seed: 3 });
  await initModelCheckpoint(deeper, { ...spec, numLayers: 2 }, { seed: 4 });
});

async function postUpdate(url: string, modelPath: string) {
  const res = await fetch(`${url}/update_weights_from_disk`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model_path: modelPath }),
  });
  return { status: res.status, body: (await res.json()) as { success: boolean; message: string } };
}

describe('loadCheckpointEngine behind the SGLang server', () => {
  it('serves a checkpoint and swaps it on update_weights_from_disk', async () => {
    const request = {
      inputIds: [1, 5, 9],
      sampling: { temperature: 0, max_new_tokens: 6, ignore_eos: true },
    };
    const engine = await loadCheckpointEngine(first);
    const server = await startSGLangServer(engine, { port: 0, modelPath: first });
    try {
      const client = createSGLangEngine({ urls: server.url, backoff: { retries: 0 } });
      const before = await client.generate(request);
      expect(before.tokenIds).toHaveLength(6);
      await client.updateWeights(second);
      expect(engine.modelPath).toBe(second);
      const after = await client.generate(request);
      const reference = await loadCheckpointEngine(second);
      expect(after).toEqual(await reference.generate(request));
      expect(after.logprobs).not.toEqual(before.logprobs);
      await reference.close();
      const bad = await client.updateWeights(join(dir, 'missing')).catch((e) => e);
      expect(bad.message).toContain(join(dir, 'missing'));
      expect(engine.modelPath).toBe(second);
    } finally {
      await server.close();
      await engine.close();
    }
  });

  it('refuses (400, success false) a checkpoint of another vocabulary or shape and keeps serving the old weights', async () => {
    const request = {
      inputIds: [1, 5, 9],
      sampling: { temperature: 0, max_new_tokens: 6, ignore_eos: true },
    };
    const engine = await loadCheckpointEngine(first);
    const server = await startSGLangServer(engine, { port: 0, modelPath: first });
    try {
      const before = await engine.generate(request);
      const vocab = await postUpdate(server.url, wider);
      expect(vocab.status).toBe(400);
      expect(vocab.body.success).toBe(false);
      expect(vocab.body.message).toContain('vocab_size 64 (served: 40)');
      expect(vocab.body.message).toContain(join(wider, 'config.json'));
      const layers = await postUpdate(server.url, deeper);
      expect(layers.status).toBe(400);
      expect(layers.body.message).toContain('num_hidden_layers 2 (served: 1)');
      expect(engine.modelPath).toBe(first);
      expect(engine.modelConfig.vocabSize).toBe(40);
      expect(await engine.generate(request)).toEqual(before);
      const same = await postUpdate(server.url, second);
      expect(same).toMatchObject({ status: 200, body: { success: true } });
    } finally {
      await server.close();
      await engine.close();
    }
  });
});
