// The OpenAI API of rl2 serve, driven by the official `openai` npm client: models, completions
// and chat completions, streamed and not, n > 1, seeds, stop strings, logprobs, errors, API key.
import { loadTokenizer } from '@rl2/data';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyCheckpoint } from '../../test/tiny-checkpoint.js';
import { serveModel } from './serve-model.js';

let model: string;
let server: Awaited<ReturnType<typeof serveModel>>;
let client: OpenAI;
// rl2 serve's SGLang extras, sent as extra body fields (a random model rarely ends by itself)
const noEos = { ignore_eos: true } as Record<string, unknown>;

beforeAll(async () => {
  model = await writeTinyCheckpoint(2);
  server = await serveModel({
    model,
    port: 0,
    backend: 'cpu',
    threads: 1,
    apiKey: 'sk-test',
    servedModelName: 'tiny',
    log: () => {},
  });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await server?.close();
});

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of stream) out.push(x);
  return out;
}

describe('rl2 serve with the openai client', () => {
  it('lists the served model and retrieves it', async () => {
    const models = await collect(client.models.list());
    expect(models.map((m) => m.id)).toEqual(['tiny']);
    expect((await client.models.retrieve('tiny')).object).toBe('model');
    await expect(client.models.retrieve('gpt-9')).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining("The model 'gpt-9' does not exist"),
    });
  });

  it('completions: n samples with a seed are reproducible and distinct; logprobs and usage', async () => {
    const req = {
      model: 'tiny',
      prompt: '12+7=',
      max_tokens: 6,
      temperature: 1,
      n: 3,
      seed: 11,
      logprobs: 2,
      ...noEos,
    };
    const a = await client.completions.create(req);
    const b = await client.completions.create(req);
    expect(a.object).toBe('text_completion');
    expect(a.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(b.choices.map((c) => c.text)).toEqual(a.choices.map((c) => c.text));
    expect(new Set(a.choices.map((c) => c.text)).size).toBeGreaterThan(1);
    for (const c of a.choices) {
      expect(c.finish_reason).toBe('length');
      expect(c.logprobs?.tokens).toHaveLength(6);
      expect(c.logprobs?.token_logprobs?.every((x) => x < 0)).toBe(true);
      expect(Object.keys(c.logprobs?.top_logprobs?.[0] ?? {}).length).toBeLessThanOrEqual(2);
    }
    const promptTokens = (await loadTokenizer(model)).encode('12+7=', {
      addSpecialTokens: true,
    }).length;
    expect(a.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: 18,
      total_tokens: promptTokens + 18,
    });
  });

  it('completions: the streamed text is the text of the same request unstreamed', async () => {
    const req = {
      model: 'tiny',
      prompt: ['3+45=', '8+8='],
      max_tokens: 8,
      temperature: 0,
      ...noEos,
    };
    const whole = await client.completions.create(req);
    const chunks = await collect(await client.completions.create({ ...req, stream: true }));
    const texts = ['', ''];
    const finish: (string | null)[] = [null, null];
    for (const c of chunks) {
      for (const choice of c.choices) {
        texts[choice.index] += choice.text;
        finish[choice.index] = choice.finish_reason ?? finish[choice.index]!;
      }
    }
    expect(texts).toEqual(whole.choices.map((c) => c.text));
    expect(finish).toEqual(['length', 'length']);
  });

  it('chat: the prompt is the chat template, logprobs with top_logprobs, seeds reproduce', async () => {
    const tokenizer = await loadTokenizer(model);
    const messages = [
      { role: 'system' as const, content: 'You add numbers.' },
      { role: 'user' as const, content: [{ type: 'text' as const, text: '12+7=' }] },
    ];
    const res = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 5,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
      ...noEos,
    });
    const rendered = tokenizer.applyChatTemplate(
      [
        { role: 'system', content: 'You add numbers.' },
        { role: 'user', content: '12+7=' },
      ],
      { addGenerationPrompt: true },
    );
    expect(res.usage?.prompt_tokens).toBe(tokenizer.encode(rendered).length);
    const choice = res.choices[0]!;
    expect(choice.message.role).toBe('assistant');
    expect(typeof choice.message.content).toBe('string');
    const content = choice.logprobs!.content!;
    expect(content).toHaveLength(5);
    for (const t of content) {
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.top_logprobs[0]!.logprob).toBeCloseTo(t.logprob, 10); // greedy: the chosen token is the most likely
      expect(t.bytes).toEqual([...Buffer.from(t.token)]);
    }
    const sample = { model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: 5, ...noEos };
    const [x, y] = [
      await client.chat.completions.create(sample),
      await client.chat.completions.create(sample),
    ];
    expect(y.choices[0]!.message.content).toBe(x.choices[0]!.message.content);
  });

  it('chat streamed with n=2 and include_usage equals the unstreamed answer', async () => {
    const req = {
      model: 'tiny',
      messages: [{ role: 'user' as const, content: '3+45=' }],
      max_tokens: 7,
      temperature: 0.8,
      seed: 9,
      n: 2,
      ...noEos,
    };
    const whole = await client.chat.completions.create(req);
    const chunks = await collect(
      await client.chat.completions.create({
        ...req,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const content = ['', ''];
    const roles: string[] = [];
    for (const c of chunks) {
      for (const ch of c.choices) {
        content[ch.index] += ch.delta.content ?? '';
        if (ch.delta.role) roles.push(ch.delta.role);
      }
    }
    expect(roles).toEqual(['assistant', 'assistant']);
    expect(content).toEqual(whole.choices.map((c) => c.message.content));
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(whole.usage);
  });

  it('a stop string ends the answer before it, streamed and not', async () => {
    const base = {
      model: 'tiny',
      messages: [{ role: 'user' as const, content: '60+21=' }],
      temperature: 0,
      ...noEos,
    };
    const free = (await client.chat.completions.create({ ...base, max_tokens: 12 })).choices[0]!
      .message.content!;
    const stop = free.slice(3, 5);
    const cut = free.slice(0, free.indexOf(stop));
    const res = await client.chat.completions.create({ ...base, max_tokens: 12, stop: [stop] });
    expect(res.choices[0]!.finish_reason).toBe('stop');
    expect(res.choices[0]!.message.content).toBe(cut);
    const streamed = await collect(
      await client.chat.completions.create({ ...base, max_tokens: 12, stop, stream: true }),
    );
    expect(streamed.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(cut);
  });

  it("client errors are 400s in OpenAI's error shape, with the message", async () => {
    const msg = { model: 'tiny', messages: [{ role: 'user' as const, content: 'hi' }] };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ max_tokens: 0 }, /max_tokens must be positive/],
      [{ temperature: -1 }, /temperature must be a non-negative finite number, got -1/],
      [{ top_p: 1.5 }, /top_p must be in \(0, 1\], got 1.5/],
      [{ top_k: 0 }, /top_k must be -1 \(disable\) or at least 1, got 0/],
      [{ n: 0 }, /n must be at least 1/],
      [{ frequency_penalty: 0.5 }, /frequency_penalty=0.5 is not supported/],
      [{ top_logprobs: 2 }, /top_logprobs needs logprobs: true/],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
        /text parts only/,
      ],
      [{ messages: [] }, /messages must be a non-empty list/],
      [{ max_tokens: 1000 }, /maximum context length of 256 tokens/],
    ];
    for (const [extra, message] of cases) {
      const err = await client.chat.completions
        .create({ ...msg, ...extra } as never)
        .catch((e) => e);
      expect(err, JSON.stringify(extra)).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.message, JSON.stringify(extra)).toMatch(message);
      expect(err.error.type).toBe('invalid_request_error');
    }
    const badPrompt = await client.completions
      .create({ model: 'tiny', prompt: [[1, 5, 999]] } as never)
      .catch((e) => e);
    expect(badPrompt).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badPrompt.message).toMatch(
      /contains 999 at position 2, outside the vocabulary \(the vocab size is 99\)/,
    );
  });

  it('needs the API key', async () => {
    const anonymous = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    const err = await anonymous.models.list().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.code).toBe('invalid_api_key');
  });
});
