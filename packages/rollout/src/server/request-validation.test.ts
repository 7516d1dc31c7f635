// Client errors are 400 with a message, never 500 (SGLang's checks: GenerateReqInput
// normalisation, the tokenizer manager's vocabulary and context checks, SamplingParams.verify);
// /abort_request; the access rules of --api-key.
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedEngine, type TokenGeneratorRequest } from '../inference/embedded-engine.js';
import { createToyGenerator } from '../inference/toy-generator.js';
import { checkAccess } from './auth.js';
import type { HttpError } from './http-io.js';
import { type SGLangServer, startSGLangServer } from './sglang-server.js';

let server: SGLangServer;
beforeAll(async () => {
  const engine = createEmbeddedEngine({ generator: createToyGenerator({ vocabSize: 32 }) });
  server = await startSGLangServer(engine, {
    port: 0,
    vocabSize: 32,
    contextLength: 64,
    decode: (ids) => ids.join(','),
  });
});
afterAll(async () => {
  await server.close();
});

async function generate(body: unknown, raw?: string) {
  const res = await fetch(`${server.url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { error?: { message: string } } & Record<string, unknown>,
  };
}

const ok = { input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 2 } };
const sp = (params: Record<string, unknown>) => ({
  input_ids: [1, 2, 3],
  sampling_params: { max_new_tokens: 2, ...params },
});

describe('/generate refuses client errors with 400 and a message', () => {
  it.each<[string, unknown, RegExp, string?]>([
    [
      'token id out of the vocabulary',
      { input_ids: [1, 32], sampling_params: {} },
      /contains 32 at position 1, outside the vocabulary \(the vocab size is 32\)/,
    ],
    ['negative token id', { input_ids: [1, -4] }, /contains -4 at position 1/],
    ['empty input_ids', { input_ids: [] }, /input_ids cannot be empty/],
    [
      'no input',
      { sampling_params: {} },
      /Either text, input_ids or input_embeds should be provided/,
    ],
    [
      'prompt over the context',
      { input_ids: Array(64).fill(1) },
      /The input \(64 tokens\) is longer than the model's context length \(64 tokens\)/,
    ],
    [
      'prompt plus new tokens over the context',
      sp({ max_new_tokens: 62 }),
      /Requested token count exceeds the model's maximum context length of 64 tokens/,
    ],
    ['max_new_tokens < 0', sp({ max_new_tokens: -1 }), /max_new_tokens must be at least 0, got -1/],
    [
      'max_new_tokens not an integer',
      sp({ max_new_tokens: 2.5 }),
      /sampling_params.max_new_tokens must be an integer, got 2.5/,
    ],
    [
      'temperature < 0',
      sp({ temperature: -0.5 }),
      /temperature must be a non-negative finite number, got -0.5/,
    ],
    ['top_p 0', sp({ top_p: 0 }), /top_p must be in \(0, 1\], got 0/],
    ['top_p > 1', sp({ top_p: 1.5 }), /top_p must be in \(0, 1\], got 1.5/],
    ['top_k 0', sp({ top_k: 0 }), /top_k must be -1 \(disable\) or at least 1, got 0/],
    ['top_k -2', sp({ top_k: -2 }), /top_k must be -1 \(disable\) or at least 1, got -2/],
    ['top_k not an integer', sp({ top_k: 1.5 }), /sampling_params.top_k must be an integer/],
    [
      'temperature a string',
      sp({ temperature: 'hot' }),
      /sampling_params.temperature must be a number, got "hot"/,
    ],
    [
      'unknown sampling key',
      sp({ temprature: 1 }),
      /sampling_params has an unknown key "temprature"/,
    ],
    [
      'penalty out of range',
      sp({ frequency_penalty: 3 }),
      /frequency_penalty must be in \[-2, 2\], got 3/,
    ],
    [
      'penalty rl2 serve lacks',
      sp({ repetition_penalty: 1.2 }),
      /repetition_penalty=1.2 is not supported by rl2 serve/,
    ],
    [
      'constrained decoding',
      sp({ regex: 'a+' }),
      /regex="a\+" is not supported by rl2 serve \(it has no constrained decoding\)/,
    ],
    [
      'stop not strings',
      sp({ stop: [1] }),
      /sampling_params.stop must be a string or a list of strings/,
    ],
    [
      'sampling_params not an object',
      { input_ids: [1], sampling_params: 3 },
      /sampling_params must be an object/,
    ],
    [
      'one sampling_params per prompt',
      { input_ids: [[1], [2]], sampling_params: [{}] },
      /sampling_params has 1 entries for 2 prompts/,
    ],
    [
      'different n in a batch',
      { input_ids: [[1], [2]], sampling_params: [{ n: 1 }, { n: 2 }] },
      /The parallel_sample_num should be the same/,
    ],
    [
      'input logprobs',
      { ...ok, logprob_start_len: 0 },
      /logprob_start_len is not supported by rl2 serve/,
    ],
    [
      'return_logprob not a boolean',
      { ...ok, return_logprob: 'yes' },
      /return_logprob must be given once or once per prompt/,
    ],
    ['text without a tokenizer', { text: 'hi' }, /text input needs a tokenizer/],
    ['body an array', [1, 2], /request body must be a JSON object, got an array/],
  ])('%s', async (_name, body, message) => {
    const r = await generate(body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error?.message).toMatch(message);
  });

  it('malformed JSON', async () => {
    const r = await generate(undefined, '{"input_ids": [1,');
    expect(r.status).toBe(400);
    expect(r.body.error?.message).toMatch(/request body is not valid JSON/);
  });

  it("ignores unknown top-level fields (as SGLang's dataclass does) and answers max_new_tokens 0 with no tokens", async () => {
    const r = await generate({ ...ok, not_a_field: 1, return_logprob: true });
    expect(r.status).toBe(200);
    const zero = await generate({
      input_ids: [1, 2],
      sampling_params: { max_new_tokens: 0 },
      return_logprob: true,
    });
    expect(zero.status).toBe(200);
    expect(zero.body).toMatchObject({
      output_ids: [],
      meta_info: {
        finish_reason: { type: 'length', length: 0 },
        completion_tokens: 0,
        output_token_logprobs: [],
      },
    });
  });

  it('n and batches: answers grouped by prompt, n seeded samples each', async () => {
    const r = await generate({
      input_ids: [[1, 2], [3]],
      sampling_params: { max_new_tokens: 3, n: 2, sampling_seed: 4, temperature: 1 },
      rid: ['p', 'q'],
    });
    const answers = r.body as unknown as {
      output_ids: number[];
      meta_info: { id: string; prompt_tokens: number };
    }[];
    expect(answers.map((a) => a.meta_info.id)).toEqual(['p_0', 'p_1', 'q_0', 'q_1']);
    expect(answers.map((a) => a.meta_info.prompt_tokens)).toEqual([2, 2, 1, 1]);
    const again = (
      await generate({
        input_ids: [1, 2],
        sampling_params: { max_new_tokens: 3, sampling_seed: 4, temperature: 1 },
      })
    ).body;
    expect(again.output_ids).toEqual(answers[0]!.output_ids); // sample 0 keeps the request's seed
  });
});

describe('/abort_request', () => {
  it('ends the request with that rid: finish_reason abort, the tokens so far', async () => {
    // A slow model (5 ms a token) that says when its first token is out, so the abort lands
    // mid-generation however loaded the machine is.
    const toy = createToyGenerator({ vocabSize: 32, delayMs: 5 });
    let started!: () => void;
    const firstToken = new Promise<void>((r) => (started = r));
    const generator = {
      generate: (req: TokenGeneratorRequest) =>
        toy.generate({
          ...req,
          onToken: (t) => {
            started();
            req.onToken?.(t);
          },
        }),
    };
    const slow = await startSGLangServer(createEmbeddedEngine({ generator }), {
      port: 0,
      vocabSize: 32,
      contextLength: 64,
    });
    try {
      const body = {
        input_ids: [1],
        sampling_params: { max_new_tokens: 60, ignore_eos: true },
        rid: 'slow',
        return_logprob: true,
      };
      const long = fetch(`${slow.url}/generate`, {
        method: 'POST',
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ meta_info: unknown }>);
      await firstToken;
      const res = await fetch(`${slow.url}/abort_request`, {
        method: 'POST',
        body: JSON.stringify({ rid: 'slow' }),
      });
      expect(res.status).toBe(200);
      const meta = (await long).meta_info as {
        finish_reason: { type: string };
        completion_tokens: number;
        output_token_logprobs: unknown[];
      };
      expect(meta.finish_reason).toEqual({
        type: 'abort',
        message: 'Aborted',
        status_code: null,
        err_type: null,
      });
      expect(meta.completion_tokens).toBeGreaterThan(0);
      expect(meta.completion_tokens).toBeLessThan(60);
      expect(meta.output_token_logprobs).toHaveLength(meta.completion_tokens);
      const bad = await fetch(`${slow.url}/abort_request`, { method: 'POST', body: '{}' });
      expect(bad.status).toBe(400);
    } finally {
      await slow.close();
    }
  });
});

describe('access rules (--api-key)', () => {
  const req = (remoteAddress: string, authorization?: string) =>
    ({ socket: { remoteAddress }, headers: { authorization } }) as unknown as IncomingMessage;
  const status = (f: () => void) => {
    try {
      f();
      return 200;
    } catch (e) {
      return (e as HttpError).status;
    }
  };

  it('without a key, /update_weights_from_disk answers loopback clients only', () => {
    expect(
      status(() => checkAccess(req('127.0.0.1'), '/update_weights_from_disk', undefined)),
    ).toBe(200);
    expect(
      status(() => checkAccess(req('::ffff:127.0.0.1'), '/update_weights_from_disk', undefined)),
    ).toBe(200);
    expect(status(() => checkAccess(req('::1'), '/update_weights_from_disk', undefined))).toBe(200);
    expect(status(() => checkAccess(req('10.1.2.3'), '/update_weights_from_disk', undefined))).toBe(
      403,
    );
    expect(status(() => checkAccess(req('10.1.2.3'), '/generate', undefined))).toBe(200);
  });

  it('with a key, every path but /health... needs the bearer key, from anywhere', () => {
    expect(
      status(() => checkAccess(req('10.1.2.3', 'Bearer k'), '/update_weights_from_disk', 'k')),
    ).toBe(200);
    expect(status(() => checkAccess(req('127.0.0.1'), '/update_weights_from_disk', 'k'))).toBe(401);
    expect(status(() => checkAccess(req('127.0.0.1', 'Bearer x'), '/generate', 'k'))).toBe(401);
    expect(status(() => checkAccess(req('127.0.0.1'), '/health', 'k'))).toBe(200);
    expect(status(() => checkAccess(req('127.0.0.1'), '/health_generate', 'k'))).toBe(200);
    expect(status(() => checkAccess(req('127.0.0.1'), '/v1/models', 'k'))).toBe(401);
  });

  it('the auth scheme is case-insensitive (RFC 7235 2.1), the key is not', () => {
    for (const header of ['bearer k', 'BEARER k', 'Bearer   k', 'bEaReR k '])
      expect(
        status(() => checkAccess(req('10.1.2.3', header), '/generate', 'k')),
        header,
      ).toBe(200);
    for (const header of ['Bearer K', 'Basic k', 'Bearerk', 'k', 'Bearer k k', 'Bearer '])
      expect(
        status(() => checkAccess(req('10.1.2.3', header), '/generate', 'k')),
        header,
      ).toBe(401);
  });
});
