import { RolloutError } from '../errors.js';
import type { FinishReason, GenerateResult, TokenLogprob } from './rollout-engine.js';

/** One entry of SGLang's meta_info.output_token_logprobs: [logprob, token_id, text or null]. */
type LogprobEntry = [number | null, number, string | null];

/**
 * Reads an SGLang /generate answer (one element of a batch) into a GenerateResult: token ids
 * and logprobs from meta_info.output_token_logprobs, the finish reason and what it matched,
 * and meta_info.output_top_logprobs when asked for. Names the URL when the shape is wrong.
 */
export function parseGenerateResponse(body: unknown, url: string): GenerateResult {
  const meta = (body as { meta_info?: Record<string, unknown> } | null)?.meta_info;
  const entries = meta?.output_token_logprobs;
  const finish = meta?.finish_reason as { type?: string; matched?: unknown } | null | undefined;
  const reason = finish?.type;
  if (!Array.isArray(entries) || !isFinishReason(reason)) {
    throw new RolloutError(
      'ENGINE_HTTP',
      `${url}/generate answered without meta_info.output_token_logprobs or meta_info.finish_reason.type ` +
        '(send return_logprob: true to an SGLang server with the native API)',
    );
  }
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  for (const e of entries as LogprobEntry[]) {
    tokenIds.push(e[1]);
    logprobs.push(e[0] ?? Number.NaN);
  }
  const result: GenerateResult = { tokenIds, logprobs, finishReason: reason };
  const matched = finish?.matched;
  if (reason === 'stop' && (typeof matched === 'number' || typeof matched === 'string'))
    result.matched = matched;
  const top = meta?.output_top_logprobs;
  if (Array.isArray(top)) result.topLogprobs = top.map((step) => toTokenLogprobs(step));
  return result;
}

function toTokenLogprobs(step: unknown): TokenLogprob[] {
  if (!Array.isArray(step)) return [];
  return (step as LogprobEntry[]).map((e) => ({ id: e[1], logprob: e[0] ?? Number.NaN }));
}

function isFinishReason(x: unknown): x is FinishReason {
  return x === 'stop' || x === 'length' || x === 'abort';
}

/**
 * The readable part of an error body: SGLang's {"error": {"message"}} or {"error": "..."},
 * the OpenAI/pydantic {"message"} or {"detail"}, else the text itself (cut to 300 characters).
 */
export function errorBodyMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = body.error as { message?: unknown } | string | undefined;
    if (typeof error === 'string') return error;
    if (error && typeof error.message === 'string') return error.message;
    if (typeof body.message === 'string') return body.message;
    if (typeof body.detail === 'string') return body.detail;
  } catch {
    // not JSON: plain text
  }
  return text.slice(0, 300);
}
