import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedEngine } from '../inference/embedded-engine.js';
import { createSGLangEngine } from '../inference/sglang-engine.js';
import { createToyGenerator } from '../inference/toy-generator.js';
import { RolloutError } from '../errors.js';
import { type SGLangServer, startSGLangServer } from './sglang-server.js';

const fast = { retries: 2, initialMs: 1, maxMs: 5 };
const open: SGLangServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function serve(
  port = 0,
  extra: Parameters<typeof createEmbeddedEngine>[0] extends infer O ? Partial<O> : never = {},
) {
  const embedded = createEmbeddedEngine({ generator: createToyGenerator(), ...extra });
  const server = await startSGLangServer(embedded, {
    port,
    maxBodyBytes: 4096,
    decode: (ids) => ids.join(','),
    vocabSize: 32,
    contextLength: 64,
  });
  open.push(server);
  return { embedded, server };
}

describe('SGLang client against the local SGLang-compatible server', () => {
  it('gives the same tokens and logprobs as the embedded engine for the same seed', async () => {
    const { embedded, server } = await serve();
    const client = createSGLangEngine({ urls: server.url, backoff: fast });
    for (const seed of [1, 2, 3]) {
      const request = {
        inputIds: [3, 1, 4, 1, 5],
        sampling: {
          temperature: 0.8,
          top_p: 0.9,
          top_k: 20,
          max_new_tokens: 16,
          sampling_seed: seed,
        },
      };
      const viaHttp = await client.generate(request);
      const direct = await embedded.generate(request);
      expect(viaHttp.tokenIds).toEqual(direct.tokenIds);
      expect(viaHttp.logprobs).toEqual(direct.logprobs);
      expect(viaHttp.finishReason).toBe('length');
    }
    expect(await client.health()).toEqual({ ok: true, backends: [{ name: server.url, ok: true }] });
  });

  it('answers with the SGLang native response shape', async () => {
    const { server } = await serve();
    const res = await fetch(`${server.url}/generate`, {
      method: 'POST',
      body: JSON.stringify({
        input_ids: [1, 2],
        sampling_params: { max_new_tokens: 3, temperature: 0 },
        return_logprob: true,
      }),
    });
    const body = (await res.json()) as { text: string; meta_info: Record<string, unknown> };
    const entries = body.meta_info.output_token_logprobs as [number, number, null][];
    expect(entries).toHaveLength(3);
    expect(body.text).toBe(entries.map((e) => e[1]).join(','));
    expect(body.meta_info.finish_reason).toEqual({ type: 'length', length: 3 });
    expect(body.meta_info.prompt_tokens).toBe(2);
    expect(body.meta_info.completion_tokens).toBe(3);
  });

  it('rejects bad requests with JSON errors: 400, 404, 405, 413', async () => {
    const { server } = await serve();
    const post = (path: string, body: string) =>
      fetch(`${server.url}${path}`, { method: 'POST', body });
    const text = await post('/generate', JSON.stringify({ text: 'hello' }));
    expect(text.status).toBe(400);
    expect(((await text.json()) as { error: { message: string } }).error.message).toMatch(
      /text input needs a tokenizer and this server has none: send input_ids/,
    );
    expect((await post('/generate', '{not json')).status).toBe(400);
    expect(
      (
        await post(
          '/generate',
          JSON.stringify({ input_ids: [1], sampling_params: { temperature: 'hot' } }),
        )
      ).status,
    ).toBe(400);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/generate`)).status).toBe(405);
    const big = await post('/generate', JSON.stringify({ input_ids: Array(5000).fill(1) }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(
      /4096 bytes/,
    );
  });

  it('forwards update_weights_from_disk, flush_cache, pause and continue', async () => {
    const loaded: string[] = [];
    const { server } = await serve(0, {
      loadWeights: async (p: string) => {
        loaded.push(p);
        if (p === '/bad') throw new Error('no config.json in /bad');
      },
    });
    const client = createSGLangEngine({ urls: [server.url], backoff: fast });
    await client.updateWeights('/ckpt/step-3');
    expect(loaded).toEqual(['/ckpt/step-3']);
    await expect(client.updateWeights('/bad')).rejects.toThrow(
      /refused "\/bad" \(HTTP 400\): Failed to update weights from \/bad: no config.json in \/bad/,
    );
    await client.flushCache();
    await client.pause();
    const held = client.generate({ inputIds: [1], sampling: { max_new_tokens: 2 } });
    await client.continue();
    expect((await held).tokenIds).toHaveLength(2);
  });

  it('names the URL when the server is down, and picks up a restarted server', async () => {
    const { server } = await serve();
    const port = server.port;
    const client = createSGLangEngine({ urls: server.url, backoff: fast });
    const request = { inputIds: [2], sampling: { max_new_tokens: 4, temperature: 0 } };
    const before = await client.generate(request);
    await server.close();
    open.length = 0;
    const err = await client.generate(request).catch((e) => e);
    expect(err).toBeInstanceOf(RolloutError);
    expect(err.code).toBe('ENGINE_UNREACHABLE');
    expect(err.message).toContain(`${server.url}/generate`);
    expect(err.message).toMatch(/3 attempt/);
    const health = await client.health();
    expect(health.ok).toBe(false);
    expect(health.backends[0].error).toMatch(/cannot reach/);
    await serve(port);
    expect(await client.generate(request)).toEqual(before);
  });

  it('retries on another URL with backoff: one dead server and one live one', async () => {
    const { server } = await serve();
    const dead = 'http://127.0.0.1:9'; // discard port: nothing listens
    const client = createSGLangEngine({ urls: [dead, server.url], backoff: fast });
    for (let i = 0; i < 4; i += 1) {
      const out = await client.generate({ inputIds: [i + 1], sampling: { max_new_tokens: 2 } });
      expect(out.tokenIds).toHaveLength(2);
    }
  });

  it('retries 5xx, does not retry 4xx, and times out a hung server', async () => {
    let calls = 0;
    const flaky = createServer((req, res) => {
      calls += 1;
      if (req.url?.startsWith('/hang')) return; // never answers
      if (calls < 3) {
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          meta_info: { output_token_logprobs: [[-0.5, 7, 'x']], finish_reason: { type: 'stop' } },
        }),
      );
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
    try {
      const client = createSGLangEngine({ urls: url, backoff: fast });
      expect(await client.generate({ inputIds: [1], sampling: {} })).toEqual({
        tokenIds: [7],
        logprobs: [-0.5],
        finishReason: 'stop',
      });
      expect(calls).toBe(3);

      const { server } = await serve();
      const strict = createSGLangEngine({ urls: server.url, backoff: fast });
      const bad = await strict.generate({ inputIds: [], sampling: {} }).catch((e) => e);
      expect(bad.code).toBe('ENGINE_HTTP');
      expect(bad.message).toMatch(/HTTP 400/);

      const hung = createSGLangEngine({
        urls: `${url}/hang`,
        backoff: { retries: 1, initialMs: 1 },
        generateTimeoutMs: 50,
      });
      const t = await hung.generate({ inputIds: [1], sampling: {} }).catch((e) => e);
      expect(t.code).toBe('ENGINE_TIMEOUT');
      expect(t.message).toMatch(/within 50 ms/);
    } finally {
      flaky.closeAllConnections();
      await new Promise((r) => flaky.close(r));
    }
  });
});
