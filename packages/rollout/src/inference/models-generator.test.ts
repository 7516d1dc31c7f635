// The embedded engine and the served engine over the real @rl2/models generator (a tiny random
// Qwen3): same tokens and logprobs for the same seed, pause/continue, and engine logprobs that
// match what a trainer recomputes from the rollout's states/actions.
import '@tensorflow/tfjs-backend-cpu';
import { type DecoderModel, createGenerator, initRandomModel, tokenLogprobs } from '@rl2/models';
import { setBackend } from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '../env/create-environment.js';
import { createRolloutRunner } from '../loop/rollout-runner.js';
import { type SGLangServer, startSGLangServer } from '../server/sglang-server.js';
import { createEmbeddedEngine } from './embedded-engine.js';
import { createSGLangEngine } from './sglang-engine.js';

let model: DecoderModel;
let server: SGLangServer;

beforeAll(async () => {
  await setBackend('cpu');
  model = initRandomModel(
    {
      family: 'qwen3',
      vocabSize: 48,
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      eosTokenId: 2,
      initializerRange: 0.5,
    },
    3,
  );
  server = await startSGLangServer(createEmbeddedEngine({ generator: createGenerator(model) }), {
    port: 0,
  });
});
afterAll(async () => {
  await server?.close();
});

describe('engines over the @rl2/models generator', () => {
  it('embedded and served engines give identical tokens and logprobs for the same seed', async () => {
    const embedded = createEmbeddedEngine({ generator: createGenerator(model) });
    const served = createSGLangEngine({ urls: server.url, backoff: { retries: 0 } });
    const outputs = new Set<string>();
    for (const seed of [11, 12, 13]) {
      const request = {
        inputIds: [1, 7, 30, 5],
        sampling: {
          temperature: 1,
          top_p: 0.95,
          top_k: 30,
          max_new_tokens: 8,
          sampling_seed: seed,
          ignore_eos: true,
        },
      };
      const a = await embedded.generate(request);
      const b = await served.generate(request);
      expect(b.tokenIds).toEqual(a.tokenIds);
      expect(b.logprobs).toEqual(a.logprobs);
      expect(a.tokenIds).toHaveLength(8);
      expect(a.finishReason).toBe('length');
      outputs.add(a.tokenIds.join(','));
    }
    expect(outputs.size).toBeGreaterThan(1); // the seed matters
  });

  it('pause aborts a running request with its partial tokens; continue lets the resumed one finish', async () => {
    const generator = createGenerator(model);
    const engine = createEmbeddedEngine({ generator });
    const request = {
      inputIds: [1, 9],
      sampling: { temperature: 0, max_new_tokens: 1000, ignore_eos: true },
    };
    const running = engine.generate(request);
    while (generator.stats().generatedTokens < 3) await new Promise((r) => setTimeout(r, 1));
    await engine.pause();
    const partial = await running;
    expect(partial.finishReason).toBe('abort');
    expect(partial.tokenIds.length).toBeGreaterThanOrEqual(3);
    expect(partial.tokenIds.length).toBeLessThan(1000);
    const left = 5;
    const resumed = engine.generate({
      inputIds: [...request.inputIds, ...partial.tokenIds],
      sampling: { ...request.sampling, max_new_tokens: left },
    });
    await engine.continue();
    const rest = await resumed;
    expect(rest.tokenIds).toHaveLength(left);
    // greedy: the resumed tokens are what the uninterrupted request would have produced next
    const whole = await engine.generate({
      ...request,
      sampling: { ...request.sampling, max_new_tokens: partial.tokenIds.length + left },
    });
    expect([...partial.tokenIds, ...rest.tokenIds]).toEqual(whole.tokenIds);
  });

  it("a rollout step's engine logprobs equal the model's logprobs of the shifted actions", async () => {
    const served = createSGLangEngine({ urls: server.url, backoff: { retries: 0 } });
    const runner = createRolloutRunner({
      engine: served,
      env: createEnvironment({ step: async (_s, action) => [null, action.length % 3, true] }),
      tokenizer: {
        encode: (t) => [...t].map((c) => c.charCodeAt(0) % 48),
        decode: (ids) => ids.map((i) => String.fromCharCode(65 + i)).join(''),
      },
      nextPrompts: (n) => Array.from({ length: n }, (_, i) => ({ prompt: `prompt ${i}` })),
      promptsPerStep: 2,
      responsesPerPrompt: 2,
      sampling: { temperature: 0.7, max_new_tokens: 6, stop_token_ids: [2] },
      seed: 5,
    });
    const { batch } = await runner.step(1);
    expect(batch.trajectories).toBe(4);
    for (const s of batch.sequences) {
      const { logprobs, entropy } = tokenLogprobs(
        model,
        { inputIds: s.states, positionIds: s.states.map((_, t) => t) },
        s.actions,
        { temperature: 0.7 },
      );
      const recomputed = await logprobs.data();
      logprobs.dispose();
      entropy.dispose();
      s.actionMask.forEach((m, t) => {
        if (m === 1) expect(Math.abs(recomputed[t] - s.llmLogps[t])).toBeLessThan(1e-4);
      });
    }
  });
});
