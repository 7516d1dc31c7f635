import { describe, expect, it } from 'vitest';
import { createEmbeddedEngine } from './embedded-engine.js';
import { createToyGenerator } from './toy-generator.js';

const sampling = { temperature: 1, max_new_tokens: 12, sampling_seed: 7 };

describe('createEmbeddedEngine over the toy generator', () => {
  it('is deterministic for a seed and differs across seeds', async () => {
    const engine = createEmbeddedEngine({ generator: createToyGenerator() });
    const a = await engine.generate({ inputIds: [1, 2, 3], sampling });
    const b = await engine.generate({ inputIds: [1, 2, 3], sampling });
    const c = await engine.generate({
      inputIds: [1, 2, 3],
      sampling: { ...sampling, sampling_seed: 8 },
    });
    expect(a.tokenIds).toHaveLength(12);
    expect(a.finishReason).toBe('length');
    expect(b).toEqual(a);
    expect(c.tokenIds).not.toEqual(a.tokenIds);
    for (const lp of a.logprobs) expect(lp).toBeLessThan(0);
  });

  it('greedy decoding picks the most likely token, so logprobs are the max', async () => {
    const engine = createEmbeddedEngine({ generator: createToyGenerator({ vocabSize: 4 }) });
    const out = await engine.generate({
      inputIds: [0],
      sampling: { temperature: 0, max_new_tokens: 5 },
    });
    // with 4 tokens the argmax has probability >= 1/4
    for (const lp of out.logprobs) expect(lp).toBeGreaterThanOrEqual(Math.log(0.25) - 1e-12);
  });

  it('stops on a stop token id and keeps it', async () => {
    const engine = createEmbeddedEngine({ generator: createToyGenerator() });
    const free = await engine.generate({
      inputIds: [5],
      sampling: { ...sampling, max_new_tokens: 30 },
    });
    const stopAt = free.tokenIds[3];
    const firstIdx = free.tokenIds.indexOf(stopAt);
    const out = await engine.generate({
      inputIds: [5],
      sampling: { ...sampling, max_new_tokens: 30, stop_token_ids: [stopAt] },
    });
    expect(out.finishReason).toBe('stop');
    expect(out.tokenIds).toEqual(free.tokenIds.slice(0, firstIdx + 1));
  });

  it('cuts at a stop string when given decode', async () => {
    const decode = (ids: readonly number[]) =>
      ids.map((i) => String.fromCharCode(97 + (i % 26))).join('');
    const engine = createEmbeddedEngine({ generator: createToyGenerator({ decode }) });
    const free = await engine.generate({
      inputIds: [5],
      sampling: { ...sampling, max_new_tokens: 20 },
    });
    const text = decode(free.tokenIds);
    const stop = text.slice(4, 6);
    const out = await engine.generate({
      inputIds: [5],
      sampling: { ...sampling, max_new_tokens: 20, stop: [stop] },
    });
    expect(out.finishReason).toBe('stop');
    expect(decode(out.tokenIds).endsWith(stop)).toBe(true);
    expect(decode(out.tokenIds)).toBe(text.slice(0, text.indexOf(stop) + stop.length));
    const noDecode = createEmbeddedEngine({ generator: createToyGenerator() });
    await expect(noDecode.generate({ inputIds: [1], sampling: { stop: ['x'] } })).rejects.toThrow(
      /decoder/,
    );
  });

  it('pause aborts in-flight requests with their partial tokens and holds new ones until continue', async () => {
    const engine = createEmbeddedEngine({ generator: createToyGenerator() });
    const full = await engine.generate({
      inputIds: [9],
      sampling: { ...sampling, max_new_tokens: 10_000 },
    });
    const running = engine.generate({
      inputIds: [9],
      sampling: { ...sampling, max_new_tokens: 10_000 },
    });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await engine.pause();
    const partial = await running;
    expect(partial.finishReason).toBe('abort');
    expect(partial.tokenIds.length).toBeLessThan(10_000);
    expect(partial.tokenIds).toEqual(full.tokenIds.slice(0, partial.tokenIds.length));
    let started = false;
    const held = engine
      .generate({ inputIds: [9], sampling: { ...sampling, max_new_tokens: 3 } })
      .then((r) => {
        started = true;
        return r;
      });
    for (let i = 0; i < 20; i += 1) await new Promise((r) => setImmediate(r));
    expect(started).toBe(false);
    await engine.continue();
    expect((await held).tokenIds).toEqual(full.tokenIds.slice(0, 3));
  });

  it('updateWeights calls loadWeights then flushCache', async () => {
    const calls: string[] = [];
    const engine = createEmbeddedEngine({
      generator: createToyGenerator(),
      loadWeights: async (p) => {
        calls.push(`load ${p}`);
      },
      flushCache: async () => {
        calls.push('flush');
      },
    });
    await engine.updateWeights('/ckpt/step-1');
    expect(calls).toEqual(['load /ckpt/step-1', 'flush']);
    expect((await engine.health()).ok).toBe(true);
  });
});

describe('createRolloutEngine', () => {
  it('picks the implementation by type', async () => {
    const { createRolloutEngine } = await import('./create-rollout-engine.js');
    const embedded = createRolloutEngine({ type: 'embedded', generator: createToyGenerator() });
    expect((await embedded.health()).backends[0].name).toBe('embedded');
    const http = createRolloutEngine({
      type: 'sglang',
      urls: ['127.0.0.1:9'],
      backoff: { retries: 0 },
    });
    expect((await http.health()).backends[0]).toMatchObject({
      name: 'http://127.0.0.1:9',
      ok: false,
    });
  });
});
