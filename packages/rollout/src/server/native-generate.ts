import type { ServerResponse } from 'node:http';
import type { GeneratedToken } from '../inference/rollout-engine.js';
import { badRequest, sendEvent, startEvents } from './http-io.js';
import {
  type GenerationItem,
  type GenerationOutcome,
  outcomeText,
  runGeneration,
  sampleSeed,
} from './run-generation.js';
import { type ParsedSampling, parseSamplingParams } from './sampling-params.js';
import { checkLoraName } from './lora-control.js';
import { type ServerContext, checkPrompt, needTokenizer, newRequestId } from './server-context.js';

/** One expanded /generate item with what its answer needs. */
interface NativeItem extends GenerationItem {
  parsed: ParsedSampling;
  returnLogprob: boolean;
  textInLogprobs: boolean;
}

/**
 * POST /generate as SGLang's GenerateReqInput: `text` or `input_ids` (one prompt or a batch),
 * `sampling_params` (an object, or one per prompt), `return_logprob`, `top_logprobs_num`,
 * `return_text_in_logprobs`, `rid`, `stream`. A single prompt gets an object, a batch (or
 * n > 1) a list, grouped by prompt. Unknown top-level keys are ignored, as SGLang's dataclass
 * ignores them.
 */
export async function handleGenerate(
  ctx: ServerContext,
  res: ServerResponse,
  body: Record<string, unknown>,
): Promise<unknown> {
  const items = expandItems(ctx, body);
  const single = items.length === 1 && !Array.isArray(body.text) && !isBatchIds(body.input_ids);
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  if (body.stream === true) return streamGenerate(ctx, res, items, single, gone.signal);
  const started = Date.now();
  const outcomes = await Promise.all(items.map((item) => runGeneration(ctx, item, gone.signal)));
  const answers = outcomes.map((out, i) =>
    nativeAnswer(ctx, items[i]!, out, (Date.now() - started) / 1000),
  );
  return single ? answers[0] : answers;
}

function isBatchIds(x: unknown): boolean {
  return Array.isArray(x) && x.length > 0 && Array.isArray(x[0]);
}

/** The prompts of a /generate body, each repeated n times (its samples next to each other). */
function expandItems(ctx: ServerContext, body: Record<string, unknown>): NativeItem[] {
  if (body.input_embeds !== undefined && body.input_embeds !== null)
    throw badRequest(
      'input_embeds is not supported by rl2 serve: send text or input_ids',
      'input_embeds',
    );
  const prompts = readPrompts(ctx, body);
  const params = body.sampling_params;
  if (Array.isArray(params) && params.length !== prompts.length) {
    throw badRequest(
      `sampling_params has ${params.length} entries for ${prompts.length} prompts: give one object, or one per prompt`,
      'sampling_params',
    );
  }
  const parsed = prompts.map((_, i) =>
    parseSamplingParams(
      Array.isArray(params) ? params[i] : params,
      Array.isArray(params) ? `sampling_params[${i}]` : 'sampling_params',
    ),
  );
  if (parsed.some((p) => p.n !== parsed[0]!.n))
    throw badRequest(
      'The parallel_sample_num should be the same for all samples in sample params.',
      'sampling_params',
    );
  const logprob = perPrompt(
    body.return_logprob,
    prompts.length,
    'return_logprob',
    (v) => typeof v === 'boolean',
  );
  const top = perPrompt(
    body.top_logprobs_num,
    prompts.length,
    'top_logprobs_num',
    (v) => Number.isInteger(v) && (v as number) >= 0,
  );
  if (
    body.logprob_start_len !== undefined &&
    body.logprob_start_len !== null &&
    body.logprob_start_len !== -1
  ) {
    throw badRequest(
      'logprob_start_len is not supported by rl2 serve (it returns output logprobs only): leave it at -1',
      'logprob_start_len',
    );
  }
  const rids = readRids(body.rid, prompts.length);
  const loras = perPrompt(
    body.lora_path,
    prompts.length,
    'lora_path',
    (v) => v === null || typeof v === 'string',
  );
  for (const name of loras) if (name) checkLoraName(ctx, name as string);
  const n = parsed[0]!.n;
  return prompts.flatMap((inputIds, i) => {
    const maxNew = checkPrompt(
      ctx,
      inputIds,
      parsed[i]!.maxNewTokens,
      prompts.length > 1 ? `input_ids[${i}]` : 'input_ids',
    );
    return Array.from({ length: n }, (_, j) => {
      const seed = sampleSeed(parsed[i]!.sampling.sampling_seed, j);
      return {
        rid: n > 1 ? `${rids[i]}_${j}` : rids[i]!,
        inputIds,
        ...(loras[i] ? { lora: loras[i] as string } : {}),
        sampling: {
          ...parsed[i]!.sampling,
          max_new_tokens: maxNew,
          ...(seed === undefined ? {} : { sampling_seed: seed }),
        },
        topLogprobs: (top[i] as number | undefined) ?? 0,
        parsed: parsed[i]!,
        returnLogprob: (logprob[i] as boolean | undefined) ?? false,
        textInLogprobs: body.return_text_in_logprobs === true,
      };
    });
  });
}

/** input_ids or text (tokenized), as a list of prompts. */
function readPrompts(ctx: ServerContext, body: Record<string, unknown>): number[][] {
  const { text, input_ids: ids } = body;
  if ((text === undefined || text === null) === (ids === undefined || ids === null)) {
    throw badRequest('Either text, input_ids or input_embeds should be provided.', 'input_ids');
  }
  if (ids !== undefined && ids !== null) {
    if (!Array.isArray(ids) || ids.length === 0)
      throw badRequest('input_ids cannot be empty.', 'input_ids');
    if (isBatchIds(ids)) {
      if (!ids.every((p) => Array.isArray(p)))
        throw badRequest('input_ids should be a list of lists for batch processing.', 'input_ids');
      return ids as number[][];
    }
    return [ids as number[]];
  }
  const texts = typeof text === 'string' ? [text] : text;
  if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === 'string')) {
    throw badRequest('text must be a string or a non-empty list of strings', 'text');
  }
  const tokenizer = needTokenizer(ctx, 'text input');
  return (texts as string[]).map((t) => tokenizer.encode(t, { addSpecialTokens: true }));
}

/** A per-prompt option given once or as a list of the batch size. */
function perPrompt(v: unknown, size: number, key: string, ok: (x: unknown) => boolean): unknown[] {
  if (v === undefined || v === null) return Array(size).fill(undefined);
  const list = Array.isArray(v) ? v : Array(size).fill(v);
  if (list.length !== size || !list.every(ok))
    throw badRequest(
      `${key} must be given once or once per prompt (${size}), got ${JSON.stringify(v)}`,
      key,
    );
  return list;
}

function readRids(v: unknown, size: number): string[] {
  if (v === undefined || v === null) return Array.from({ length: size }, () => newRequestId());
  if (typeof v === 'string')
    return size === 1 ? [v] : Array.from({ length: size }, (_, i) => `${v}_${i}`);
  if (Array.isArray(v) && v.length === size && v.every((r) => typeof r === 'string'))
    return v as string[];
  throw badRequest('The rid should be a string or a list of strings, one per prompt.', 'rid');
}

/** SGLang's answer for one item: {text, output_ids, meta_info}. */
function nativeAnswer(
  ctx: ServerContext,
  item: NativeItem,
  out: GenerationOutcome,
  latency: number,
  finished = true,
) {
  const text = outcomeText(
    ctx,
    out,
    item.parsed.skipSpecialTokens,
    item.sampling.no_stop_trim === true,
  );
  const meta: Record<string, unknown> = {
    id: item.rid,
    finish_reason: finished ? finishReasonJson(out) : null,
    prompt_tokens: item.inputIds.length,
    reasoning_tokens: 0,
    completion_tokens: out.tokenIds.length,
    cached_tokens: 0,
  };
  if (item.returnLogprob) {
    const entry = (logprob: number, id: number) => [
      logprob,
      id,
      item.textInLogprobs ? ctx.decode([id], false) : null,
    ];
    meta.input_token_logprobs = [];
    meta.output_token_logprobs = out.tokenIds.map((id, k) => entry(out.logprobs[k]!, id));
    meta.output_token_logprobs_length = out.tokenIds.length;
    if (item.topLogprobs > 0)
      meta.output_top_logprobs = (out.topLogprobs ?? []).map((step) =>
        step.map((t) => entry(t.logprob, t.id)),
      );
  }
  if (finished) meta.e2e_latency = latency;
  return { text, output_ids: out.tokenIds, meta_info: meta };
}

/** meta_info.finish_reason as SGLang's FINISH_* classes write it. */
function finishReasonJson(out: GenerationOutcome): Record<string, unknown> {
  if (out.finishReason === 'stop')
    return { type: 'stop', matched: out.matched ?? out.tokenIds.at(-1) ?? null };
  if (out.finishReason === 'length') return { type: 'length', length: out.tokenIds.length };
  return { type: 'abort', message: 'Aborted', status_code: null, err_type: null };
}

/**
 * stream=true: server-sent events, one per generated token, each with the whole answer so far
 * (SGLang's default, non-incremental stream) and, for batches, its `index`; then `data: [DONE]`.
 */
async function streamGenerate(
  ctx: ServerContext,
  res: ServerResponse,
  items: NativeItem[],
  single: boolean,
  gone: AbortSignal,
): Promise<void> {
  startEvents(res);
  const started = Date.now();
  const emit = (i: number, out: GenerationOutcome, finished: boolean) => {
    const answer = nativeAnswer(ctx, items[i]!, out, (Date.now() - started) / 1000, finished);
    sendEvent(res, single ? answer : { ...answer, index: i });
  };
  await Promise.all(
    items.map(async (item, i) => {
      const sofar: GeneratedToken[] = [];
      const partial = (): GenerationOutcome => ({
        tokenIds: sofar.map((t) => t.id),
        logprobs: sofar.map((t) => t.logprob),
        topLogprobs: sofar.map((t) => t.top ?? []),
        finishReason: 'length',
      });
      try {
        const out = await runGeneration(ctx, item, gone, (t) => {
          sofar.push(t);
          emit(i, partial(), false);
        });
        emit(i, out, true);
      } catch (e) {
        sendEvent(res, { error: { message: (e as Error).message } });
      }
    }),
  );
  sendEvent(res, '[DONE]');
  res.end();
}
