import { randomUUID } from 'node:crypto';
import type { Tokenizer } from '@rl2/data';
import type { RolloutEngine } from '../inference/rollout-engine.js';
import { badRequest } from './http-io.js';

/** What the server needs of a tokenizer: the @rl2/data Tokenizer fits. */
export type ServedTokenizer = Pick<Tokenizer, 'encode' | 'decode'> &
  Partial<Pick<Tokenizer, 'applyChatTemplate' | 'hasChatTemplate'>>;

/** Requests in flight by id (SGLang's `rid`), so /abort_request and pause can end them. */
export class RequestRegistry {
  private readonly running = new Map<string, Set<AbortController>>();

  add(rid: string, controller: AbortController): void {
    const set = this.running.get(rid) ?? new Set();
    set.add(controller);
    this.running.set(rid, set);
  }

  delete(rid: string, controller: AbortController): void {
    const set = this.running.get(rid);
    set?.delete(controller);
    if (set?.size === 0) this.running.delete(rid);
  }

  /** Aborts the requests with this id (every request when `rid` is undefined); returns how many. */
  abort(rid?: string): number {
    const sets =
      rid === undefined
        ? [...this.running.values()]
        : [this.running.get(rid) ?? new Set<AbortController>()];
    let n = 0;
    for (const set of sets) {
      for (const c of set) {
        c.abort();
        n += 1;
      }
    }
    return n;
  }
}

/** Everything the API handlers share: the engine, the tokenizer and what the model accepts. */
export interface ServerContext {
  readonly engine: RolloutEngine;
  readonly tokenizer?: ServedTokenizer;
  /** Vocabulary size: prompts with ids at or above it are refused (400). */
  readonly vocabSize?: number;
  /** max_position_embeddings: prompt plus new tokens must fit (400 otherwise). */
  readonly contextLength?: number;
  readonly modelPath: string | null;
  /** The `model` of the OpenAI API (/v1/models). */
  readonly servedModelName: string;
  readonly registry: RequestRegistry;
  /** Set by /update_weights_from_disk {weight_version}; reported by /get_model_info. */
  weightVersion: string;
  /** Text of `ids`; '' without a tokenizer or decode function. */
  decode(ids: readonly number[], skipSpecialTokens: boolean): string;
}

/** A fresh request id, as SGLang makes them (uuid4 hex). */
export function newRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

/** The tokenizer, or a 400 saying this server was started without one. */
export function needTokenizer(ctx: ServerContext, what: string): ServedTokenizer {
  if (!ctx.tokenizer)
    throw badRequest(
      `${what} needs a tokenizer and this server has none: send input_ids, or serve a checkpoint folder with tokenizer.json`,
    );
  return ctx.tokenizer;
}

/**
 * Checks a prompt as SGLang's tokenizer manager does (ids inside the vocabulary, prompt and new
 * tokens inside the context length) and returns the max new tokens to ask the engine for
 * (`maxNewTokens` null: what is left of the context).
 */
export function checkPrompt(
  ctx: ServerContext,
  inputIds: readonly number[],
  maxNewTokens: number | null,
  where: string,
): number {
  if (inputIds.length === 0) throw badRequest(`${where} cannot be empty.`, where);
  const bad = inputIds.findIndex(
    (t) => !Number.isInteger(t) || t < 0 || (ctx.vocabSize !== undefined && t >= ctx.vocabSize),
  );
  if (bad >= 0) {
    const shown =
      inputIds.length > 16
        ? `[${inputIds.slice(0, 16).join(', ')}, ...]`
        : `[${inputIds.join(', ')}]`;
    const limit =
      ctx.vocabSize === undefined
        ? 'they must be non-negative integers'
        : `the vocab size is ${ctx.vocabSize}`;
    throw badRequest(
      `The ${where} ${shown} contains ${JSON.stringify(inputIds[bad])} at position ${bad}, outside the vocabulary (${limit}).`,
      where,
    );
  }
  const context = ctx.contextLength;
  if (context === undefined) return maxNewTokens ?? 128;
  if (inputIds.length >= context) {
    throw badRequest(
      `The input (${inputIds.length} tokens) is longer than the model's context length (${context} tokens).`,
      where,
    );
  }
  if (maxNewTokens === null) return context - inputIds.length;
  if (maxNewTokens + inputIds.length > context) {
    throw badRequest(
      `Requested token count exceeds the model's maximum context length of ${context} tokens. ` +
        `You requested a total of ${maxNewTokens + inputIds.length} ` +
        `tokens: ${inputIds.length} tokens from the input messages and ${maxNewTokens} tokens for the completion. ` +
        'Please reduce the number of tokens in the input messages or the completion to fit within the limit.',
      where,
    );
  }
  return maxNewTokens;
}
