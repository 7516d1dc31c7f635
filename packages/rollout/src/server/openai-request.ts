import type { ChatMessage } from '@rl2/data';
import { badRequest } from './http-io.js';
import { type GenerationItem, sampleSeed } from './run-generation.js';
import { loraOfModel } from './lora-control.js';
import { type ParsedSampling, parseSamplingParams } from './sampling-params.js';
import { type ServerContext, checkPrompt, needTokenizer, newRequestId } from './server-context.js';

/** A parsed /v1/completions or /v1/chat/completions request: what to generate and how to answer. */
export interface OpenAiPlan {
  kind: 'completion' | 'chat';
  id: string;
  created: number;
  model: string;
  /** One item per (prompt, sample), prompt-major: choice index = prompt * n + sample. */
  items: GenerationItem[];
  /** Prompt tokens, each prompt counted once. */
  promptTokens: number;
  parsed: ParsedSampling;
  /** null: no logprobs; else the number of top alternatives per token (0: only the chosen one). */
  logprobs: number | null;
  stream: boolean;
  includeUsage: boolean;
}

/** OpenAI fields rl2 serve refuses unless they keep their default. */
const UNSUPPORTED: Record<string, unknown[]> = {
  echo: [false],
  suffix: [null, ''],
  best_of: [null, 1],
  logit_bias: [null],
  response_format: [null],
};

/** POST /v1/completions: `prompt` is a string, a list of strings, a list of ids or a list of id lists. */
export function planCompletion(ctx: ServerContext, body: Record<string, unknown>): OpenAiPlan {
  const prompts = completionPrompts(ctx, body.prompt);
  const logprobs = optionalInt(body.logprobs, 'logprobs', 0, 20);
  return plan(ctx, body, 'completion', prompts, logprobs ?? null, 16);
}

/** POST /v1/chat/completions: `messages` rendered with the checkpoint's chat template. */
export function planChat(ctx: ServerContext, body: Record<string, unknown>): OpenAiPlan {
  const tokenizer = needTokenizer(ctx, '/v1/chat/completions');
  if (!tokenizer.applyChatTemplate || tokenizer.hasChatTemplate === false) {
    throw badRequest(
      'this checkpoint has no chat template (tokenizer_config.json chat_template or ' +
        'chat_template.jinja): use /v1/completions with a prompt',
      'messages',
    );
  }
  const messages = chatMessages(body.messages);
  const kwargs = body.chat_template_kwargs;
  if (
    kwargs !== undefined &&
    kwargs !== null &&
    (typeof kwargs !== 'object' || Array.isArray(kwargs))
  )
    throw badRequest('chat_template_kwargs must be an object', 'chat_template_kwargs');
  const text = tokenizer.applyChatTemplate(messages, {
    addGenerationPrompt: body.add_generation_prompt !== false,
    ...(Array.isArray(body.tools) ? { tools: body.tools } : {}),
    ...(kwargs ? { templateKwargs: kwargs as Record<string, unknown> } : {}),
  });
  const wantLogprobs = body.logprobs === true;
  if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean')
    throw badRequest('logprobs must be true or false', 'logprobs');
  const top = optionalInt(body.top_logprobs, 'top_logprobs', 0, 20);
  if (top !== undefined && top > 0 && !wantLogprobs)
    throw badRequest('top_logprobs needs logprobs: true', 'top_logprobs');
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  return plan(
    ctx,
    { ...body, max_tokens: maxTokens },
    'chat',
    [tokenizer.encode(text)],
    wantLogprobs ? (top ?? 0) : null,
    null,
  );
}

function plan(
  ctx: ServerContext,
  body: Record<string, unknown>,
  kind: OpenAiPlan['kind'],
  prompts: number[][],
  logprobs: number | null,
  defaultMaxTokens: number | null,
): OpenAiPlan {
  for (const [key, allowed] of Object.entries(UNSUPPORTED)) {
    if (body[key] !== undefined && !allowed.includes(body[key]))
      throw badRequest(`${key}=${JSON.stringify(body[key])} is not supported by rl2 serve`, key);
  }
  const maxTokens = optionalInt(
    body.max_tokens,
    'max_tokens',
    Number.NEGATIVE_INFINITY,
    Number.POSITIVE_INFINITY,
  );
  if (maxTokens !== undefined && maxTokens <= 0)
    throw badRequest('max_tokens must be positive', 'max_tokens');
  const seed = optionalInt(body.seed, 'seed', Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY);
  if (body.model !== undefined && typeof body.model !== 'string')
    throw badRequest('model must be a string', 'model');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw badRequest('stream must be true or false', 'stream');
  const parsed = parseSamplingParams(samplingOf(body, maxTokens, seed), '', defaultMaxTokens);
  const lora = loraOfModel(ctx, body.model);
  const n = parsed.n;
  const items = prompts.flatMap((inputIds, i) => {
    const maxNew = checkPrompt(
      ctx,
      inputIds,
      parsed.maxNewTokens,
      prompts.length > 1 ? `prompt[${i}]` : kind === 'chat' ? 'messages' : 'prompt',
    );
    return Array.from({ length: n }, (_, j) => {
      const s = sampleSeed(parsed.sampling.sampling_seed, i * n + j);
      return {
        rid: newRequestId(),
        inputIds,
        ...(lora ? { lora } : {}),
        sampling: {
          ...parsed.sampling,
          max_new_tokens: maxNew,
          ...(s === undefined ? {} : { sampling_seed: s }),
        },
        topLogprobs: logprobs ?? 0,
      };
    });
  });
  const options = body.stream_options as { include_usage?: unknown } | null | undefined;
  return {
    kind,
    id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${newRequestId()}`,
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : ctx.servedModelName,
    items,
    promptTokens: prompts.reduce((a, p) => a + p.length, 0),
    parsed,
    logprobs,
    stream: body.stream === true,
    includeUsage: body.stream === true && options?.include_usage === true,
  };
}

/** The OpenAI request's sampling fields under their SGLang names (absent ones left out). */
function samplingOf(
  body: Record<string, unknown>,
  maxTokens: number | undefined,
  seed: number | undefined,
): Record<string, unknown> {
  const map: Record<string, unknown> = {
    max_new_tokens: maxTokens,
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    n: body.n,
    stop: body.stop,
    stop_token_ids: body.stop_token_ids,
    ignore_eos: body.ignore_eos,
    no_stop_trim: body.no_stop_trim,
    skip_special_tokens: body.skip_special_tokens,
    sampling_seed: seed,
    min_p: body.min_p,
    min_new_tokens: body.min_tokens,
    frequency_penalty: body.frequency_penalty,
    presence_penalty: body.presence_penalty,
    repetition_penalty: body.repetition_penalty,
    regex: body.regex,
    json_schema: body.json_schema,
    ebnf: body.ebnf,
  };
  return Object.fromEntries(Object.entries(map).filter(([, v]) => v !== undefined));
}

function optionalInt(v: unknown, key: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    const range = Number.isFinite(min) ? ` in [${min}, ${max}]` : '';
    throw badRequest(`${key} must be an integer${range}, got ${JSON.stringify(v)}`, key);
  }
  return v as number;
}

/** `prompt` of /v1/completions as token id lists (text is tokenized). */
function completionPrompts(ctx: ServerContext, prompt: unknown): number[][] {
  const isIds = (x: unknown) =>
    Array.isArray(x) && x.length > 0 && x.every((t) => typeof t === 'number');
  if (typeof prompt === 'string')
    return [needTokenizer(ctx, 'a text prompt').encode(prompt, { addSpecialTokens: true })];
  if (isIds(prompt)) return [prompt as number[]];
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((p) => typeof p === 'string')) {
    const tokenizer = needTokenizer(ctx, 'a text prompt');
    return (prompt as string[]).map((p) => tokenizer.encode(p, { addSpecialTokens: true }));
  }
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(isIds))
    return prompt as number[][];
  throw badRequest(
    'prompt must be a string, a list of strings, a list of token ids or a list of token id lists (none of them empty)',
    'prompt',
  );
}

/** `messages`: {role, content} with text content (a string or text parts); other parts are refused. */
function chatMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0)
    throw badRequest('messages must be a non-empty list of {role, content}', 'messages');
  return raw.map((m, i) => {
    if (m === null || typeof m !== 'object' || typeof (m as { role?: unknown }).role !== 'string') {
      throw badRequest(`messages[${i}] must be an object with a string role`, `messages[${i}]`);
    }
    const { content, ...rest } = m as Record<string, unknown>;
    return { ...rest, role: rest.role as string, content: messageText(content, i) };
  });
}

function messageText(content: unknown, i: number): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw badRequest(
      `messages[${i}].content must be a string or a list of content parts`,
      `messages[${i}].content`,
    );
  return content
    .map((part, k) => {
      const p = part as { type?: unknown; text?: unknown };
      if (p?.type !== 'text' || typeof p.text !== 'string') {
        throw badRequest(
          `messages[${i}].content[${k}] has type ${JSON.stringify(p?.type)}: rl2 serve takes text parts only`,
          `messages[${i}].content`,
        );
      }
      return p.text;
    })
    .join('');
}
