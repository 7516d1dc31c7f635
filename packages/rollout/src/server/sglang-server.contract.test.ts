// rl2 serve (serveModel over a tiny random checkpoint) against the contract fixtures taken from
// SGLang's source (fixtures/sglang): same status codes, content types and response shapes
// (keys and JSON types) for the native API, and OpenAI's shapes under /v1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SGLangFixture,
  loadFixtures,
  parseEvents,
  shapeMismatches,
} from '../../test/sglang-fixtures.js';
import { writeTinyCheckpoint } from '../../test/tiny-checkpoint.js';
import { serveModel } from './serve-model.js';

let F: Record<string, SGLangFixture>;
let model: string;
let server: Awaited<ReturnType<typeof serveModel>>;
let keyed: Awaited<ReturnType<typeof serveModel>>;

beforeAll(async () => {
  F = loadFixtures();
  model = await writeTinyCheckpoint();
  const common = { model, port: 0, backend: 'cpu' as const, threads: 1, log: () => {} };
  server = await serveModel(common);
  keyed = await serveModel({ ...common, apiKey: 'sk-contract' });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await keyed?.close();
});

/** Sends a fixture's request (or `body` in its place) and returns status, content type and payload. */
async function send(f: SGLangFixture, options: { url?: string; body?: unknown } = {}) {
  const body = options.body ?? f.request.body;
  const res = await fetch(`${options.url ?? server.url}${f.request.path}`, {
    method: f.request.method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  return {
    status: res.status,
    type,
    text,
    json: type.includes('application/json') ? JSON.parse(text) : undefined,
  };
}

/** Sends a streamed /generate and resolves at its first event (the rest is left to the server). */
async function firstStreamEvent(body: unknown): Promise<void> {
  const res = await fetch(`${server.url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const reader = res.body!.getReader();
  await reader.read();
  void reader.cancel().catch(() => {});
}

/** Status, content type and body shape of an answer against its fixture. */
function expectLike(f: SGLangFixture, got: Awaited<ReturnType<typeof send>>) {
  expect(got.status, got.text).toBe(f.response.status);
  if (f.response.text !== undefined) {
    expect(got.text).toBe(f.response.text);
    if (f.response.contentType) expect(got.type).toContain(f.response.contentType);
    return;
  }
  expect(got.type).toContain('application/json');
  expect(shapeMismatches(f.response.body, got.json, f.loose)).toEqual([]);
}

describe('rl2 serve answers like SGLang (fixtures from its source)', () => {
  it.each([
    'generate-input-ids',
    'generate-batch',
    'generate-text',
    'generate-bad-request',
    'health',
    'health-generate',
    'get-model-info',
    'server-info',
    'flush-cache',
    'pause-generation',
    'continue-generation',
    'abort-request',
    'update-weights-from-disk-failed',
    'v1-models',
    'v1-completions',
    'v1-chat-completions',
    'v1-bad-request',
  ])('%s', async (name) => {
    expectLike(F[name]!, await send(F[name]!));
  });

  it('update-weights-from-disk (the served checkpoint itself)', async () => {
    const f = F['update-weights-from-disk']!;
    expectLike(f, await send(f, { body: { model_path: model } }));
  });

  it('generate-stop-token and generate-stop-string (stops taken from a greedy run)', async () => {
    const free = (await send(F['generate-input-ids']!)).json as {
      output_ids: number[];
      text: string;
    };
    const stopId = free.output_ids[1]!;
    const byId = await send(F['generate-stop-token']!, {
      body: {
        input_ids: [1, 5, 9],
        sampling_params: {
          temperature: 0,
          max_new_tokens: 3,
          stop_token_ids: [stopId],
          ignore_eos: true,
        },
        return_logprob: true,
      },
    });
    expectLike(F['generate-stop-token']!, byId);
    expect(byId.json.meta_info.finish_reason).toEqual({ type: 'stop', matched: stopId });
    // stop strings match the text with special tokens (as SGLang decodes for them)
    const plain = {
      temperature: 0,
      max_new_tokens: 12,
      ignore_eos: true,
      skip_special_tokens: false,
    };
    const long = (
      await send(F['generate-input-ids']!, {
        body: { input_ids: [1, 5, 9], sampling_params: plain, return_logprob: true },
      })
    ).json;
    const stop = (long.text as string).slice(2, 4);
    const byText = await send(F['generate-stop-string']!, {
      body: {
        input_ids: [1, 5, 9],
        sampling_params: { ...plain, stop: [stop] },
        return_logprob: true,
      },
    });
    expectLike(F['generate-stop-string']!, byText);
    expect(byText.json.meta_info.finish_reason).toEqual({ type: 'stop', matched: stop });
    expect(byText.json.text).toBe(
      (long.text as string).slice(0, (long.text as string).indexOf(stop)),
    );
  });

  it('generate-aborted (a running request aborted by /pause_generation)', async () => {
    const f = F['generate-aborted']!;
    // the fixture asks for 1000 tokens; the tiny model's context is 256
    const sampling = { temperature: 1, max_new_tokens: 250, ignore_eos: true };
    const pending = send(f, { body: { ...(f.request.body as object), sampling_params: sampling } });
    // a streamed companion sent after it: its first event means both are decoding (no fixed
    // sleep, which a fast engine can outrun)
    await firstStreamEvent({ input_ids: [1, 2, 3], sampling_params: sampling, stream: true });
    expectLike(F['pause-generation']!, await send(F['pause-generation']!));
    const got = await pending;
    await send(F['continue-generation']!);
    expectLike(f, got);
    expect(got.json.meta_info.finish_reason.type).toBe('abort');
    expect(got.json.output_ids.length).toBeGreaterThan(0);
  });

  it('generate-stream: cumulative events, the last with finish_reason, then [DONE]', async () => {
    const f = F['generate-stream']!;
    const got = await send(f);
    expect(got.status).toBe(200);
    expect(got.type).toContain('text/event-stream');
    const events = parseEvents(got.text);
    const [partial, final] = f.response.events!;
    expect(events.at(-1)).toBe('[DONE]');
    const answers = events.slice(0, -1) as { output_ids: number[] }[];
    expect(answers.map((a) => a.output_ids.length)).toEqual([1, 2, 2]); // each token, then the finished answer
    for (const a of answers.slice(0, -1)) expect(shapeMismatches(partial, a, f.loose)).toEqual([]);
    expect(shapeMismatches(final, answers.at(-1), f.loose)).toEqual([]);
  });

  it('v1-chat-stream: role chunk, content chunks, finish chunk, usage chunk, [DONE]', async () => {
    const f = F['v1-chat-stream']!;
    const got = await send(f);
    expect(got.type).toContain('text/event-stream');
    const events = parseEvents(got.text);
    const [role, content, finish, usage, done] = f.response.events!;
    expect(events.at(-1)).toBe(done);
    const chunks = events.slice(0, -1) as { choices: { finish_reason: string | null }[] }[];
    expect(shapeMismatches(role, chunks[0], f.loose)).toEqual([]);
    expect(shapeMismatches(usage, chunks.at(-1), f.loose)).toEqual([]);
    const last = chunks.at(-2)!;
    expect(shapeMismatches(finish, last, f.loose)).toEqual([]);
    for (const c of chunks.slice(1, -2)) expect(shapeMismatches(content, c, f.loose)).toEqual([]);
  });

  it('unauthorized and v1-unauthorized (a server started with an API key); /health needs none', async () => {
    expectLike(F.unauthorized!, await send(F.unauthorized!, { url: keyed.url }));
    expectLike(F['v1-unauthorized']!, await send(F['v1-unauthorized']!, { url: keyed.url }));
    expectLike(F.health!, await send(F.health!, { url: keyed.url }));
  });
});
