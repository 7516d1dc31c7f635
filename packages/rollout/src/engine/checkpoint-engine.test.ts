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

beforeAll(async () => {
  await setBackend('cpu');
  await initModelCheckpoint(first, spec, { seed: 1 });
  await initModelCheckpoint(second, spec, { seed: 2 });
});

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
});
