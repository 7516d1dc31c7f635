// The SGLang client (createSGLangEngine) against a fake server that answers with the contract
// fixtures taken from SGLang's source (fixtures/sglang): what it sends, how it reads the
// answers, which failures it retries.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeSGLang, startFakeSGLang } from '../../test/fake-sglang-server.js';
import { type SGLangFixture, loadFixtures } from '../../test/sglang-fixtures.js';
import { RolloutError } from '../errors.js';
import { createSGLangEngine } from './sglang-engine.js';

const fast = { retries: 2, initialMs: 1, maxMs: 2 };
let F: Record<string, SGLangFixture>;
const open: FakeSGLang[] = [];
beforeAll(() => {
  F = loadFixtures();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function fake(
  answers: Record<string, SGLangFixture>,
  options: Parameters<typeof startFakeSGLang>[1] = {},
) {
  const s = await startFakeSGLang(answers, options);
  open.push(s);
  return s;
}

/** The fixture request as the client's GenerateRequest. */
function requestOf(f: SGLangFixture) {
  const body = f.request.body as { input_ids: number[]; sampling_params: Record<string, unknown> };
  return { inputIds: body.input_ids, sampling: body.sampling_params };
}

describe('SGLang client against SGLang-shaped answers', () => {
  it('sends /generate as RL2 does and reads ids, logprobs and the finish reason', async () => {
    const f = F['generate-input-ids']!;
    const s = await fake({ '/generate': f });
    const out = await createSGLangEngine({ urls: s.url, backoff: fast }).generate(requestOf(f));
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]).toMatchObject({ method: 'POST', path: '/generate', body: f.request.body });
    const entries = (
      f.response.body as { meta_info: { output_token_logprobs: [number, number, null][] } }
    ).meta_info.output_token_logprobs;
    expect(out).toEqual({
      tokenIds: entries.map((e) => e[1]),
      logprobs: entries.map((e) => e[0]),
      finishReason: 'length',
    });
  });

  it('reads what a stop token or a stop string matched, and an aborted answer with its tokens', async () => {
    const s = await fake({ '/generate': F['generate-stop-token']! });
    const client = createSGLangEngine({ urls: s.url, backoff: fast });
    expect(await client.generate(requestOf(F['generate-stop-token']!))).toMatchObject({
      finishReason: 'stop',
      matched: 2,
      tokenIds: [17, 2],
    });
    s.answer('/generate', F['generate-stop-string']!);
    expect(await client.generate(requestOf(F['generate-stop-string']!))).toMatchObject({
      finishReason: 'stop',
      matched: '</calc>',
    });
    s.answer('/generate', F['generate-aborted']!);
    expect(await client.generate(requestOf(F['generate-aborted']!))).toMatchObject({
      finishReason: 'abort',
      tokenIds: [17, 4],
    });
  });

  it('asks for top logprobs with top_logprobs_num and reads output_top_logprobs', async () => {
    const f = structuredClone(F['generate-input-ids']!);
    const meta = (f.response.body as { meta_info: Record<string, unknown> }).meta_info;
    meta.output_top_logprobs = [
      [
        [-0.5, 17, null],
        [-1.5, 3, null],
      ],
      [
        [-1.2, 4, null],
        [-1.3, 5, null],
      ],
      [
        [-0.08, 23, null],
        [-3, 1, null],
      ],
    ];
    const s = await fake({ '/generate': f });
    const out = await createSGLangEngine({ urls: s.url, backoff: fast }).generate({
      ...requestOf(f),
      topLogprobs: 2,
    });
    expect((s.calls[0]!.body as { top_logprobs_num: number }).top_logprobs_num).toBe(2);
    expect(out.topLogprobs?.[1]).toEqual([
      { id: 4, logprob: -1.2 },
      { id: 5, logprob: -1.3 },
    ]);
  });

  it("does not retry a 400 and shows SGLang's message; retries 5xx, then succeeds", async () => {
    const s = await fake({ '/generate': F['generate-bad-request']! });
    const client = createSGLangEngine({ urls: s.url, backoff: fast });
    const err = await client.generate(requestOf(F['generate-bad-request']!)).catch((e) => e);
    expect(err).toBeInstanceOf(RolloutError);
    expect(err.code).toBe('ENGINE_HTTP');
    expect(err.message).toContain(
      'answered HTTP 400: The input_ids [1, 5, 999999] contains values greater than the vocab size (96).',
    );
    expect(s.calls).toHaveLength(1);
    s.answer('/generate', F['generate-input-ids']!);
    s.fail('/generate', 503, 2);
    expect((await client.generate(requestOf(F['generate-input-ids']!))).tokenIds).toEqual([
      17, 4, 23,
    ]);
    expect(s.calls).toHaveLength(4);
  });

  it('control calls: health (empty 200), flush_cache (text), pause/continue, update_weights_from_disk (200, and 400 with the reason)', async () => {
    const s = await fake({
      '/health': F.health!,
      '/flush_cache': F['flush-cache']!,
      '/pause_generation': F['pause-generation']!,
      '/continue_generation': F['continue-generation']!,
      '/update_weights_from_disk': F['update-weights-from-disk']!,
    });
    const client = createSGLangEngine({ urls: [s.url], backoff: fast });
    expect(await client.health()).toEqual({ ok: true, backends: [{ name: s.url, ok: true }] });
    await client.flushCache();
    await client.pause();
    await client.continue();
    await client.updateWeights('runs/ppo/weights');
    expect(s.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /health',
      'POST /flush_cache',
      'POST /pause_generation',
      'POST /continue_generation',
      'POST /update_weights_from_disk',
    ]);
    expect(s.calls[4]!.body).toEqual(F['update-weights-from-disk']!.request.body);
    s.answer('/update_weights_from_disk', F['update-weights-from-disk-failed']!);
    const err = await client.updateWeights('/no/such/folder').catch((e) => e);
    expect(err.message).toMatch(
      /refused "\/no\/such\/folder" \(HTTP 400\): Failed to update weights: \/no\/such\/folder has no config.json/,
    );
    expect(s.calls).toHaveLength(6); // a 400 is not retried
  });

  it('sends the API key as a bearer token; a 401 is not retried and says how to set the key', async () => {
    const s = await fake(
      { '/generate': F['generate-input-ids']!, '/health': F.health! },
      { apiKey: 'sk-test', unauthorized: F.unauthorized },
    );
    const anonymous = createSGLangEngine({ urls: s.url, backoff: fast });
    const err = await anonymous.generate(requestOf(F['generate-input-ids']!)).catch((e) => e);
    expect(err.message).toMatch(
      /HTTP 401: Unauthorized \(the server needs an API key: set RL2_API_KEY/,
    );
    expect(s.calls).toHaveLength(1);
    expect((await anonymous.health()).ok).toBe(true); // /health needs no key
    const keyed = createSGLangEngine({ urls: s.url, backoff: fast, apiKey: 'sk-test' });
    expect((await keyed.generate(requestOf(F['generate-input-ids']!))).tokenIds).toEqual([
      17, 4, 23,
    ]);
    expect(s.calls.at(-1)!.authorization).toBe('Bearer sk-test');
    const wrong = createSGLangEngine({ urls: s.url, backoff: fast, apiKey: 'nope' });
    expect(
      (await wrong.generate(requestOf(F['generate-input-ids']!)).catch((e) => e)).message,
    ).toMatch(/refused this API key/);
  });
});
