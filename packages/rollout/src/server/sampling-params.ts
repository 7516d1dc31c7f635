import type { SamplingParams } from '../inference/rollout-engine.js';
import { badRequest } from './http-io.js';

/** `sampling_params` of one request, checked as SGLang's SamplingParams.verify() checks them. */
export interface ParsedSampling {
  /** What the engine gets; max_new_tokens is set by the caller from `maxNewTokens`. */
  sampling: SamplingParams;
  /** Requested new tokens; null: up to the context length (SGLang's max_new_tokens=null). */
  maxNewTokens: number | null;
  /** Parallel samples of the prompt (SGLang's `n`). */
  n: number;
  /** Drop special tokens from the text (SGLang default true). */
  skipSpecialTokens: boolean;
}

/** SGLang sampling keys rl2 serve accepts only at their default, with that default. */
const DEFAULT_ONLY: Record<string, number | null> = {
  min_p: 0,
  frequency_penalty: 0,
  presence_penalty: 0,
  repetition_penalty: 1,
  min_new_tokens: 0,
  json_schema: null,
  regex: null,
  ebnf: null,
  structural_tag: null,
  stop_regex: null,
  logit_bias: null,
  custom_params: null,
};

const SUPPORTED = [
  'max_new_tokens',
  'temperature',
  'top_p',
  'top_k',
  'n',
  'stop',
  'stop_token_ids',
  'ignore_eos',
  'no_stop_trim',
  'skip_special_tokens',
  'spaces_between_special_tokens',
  'sampling_seed',
  'stream_interval',
];
const KNOWN = new Set([...SUPPORTED, ...Object.keys(DEFAULT_ONLY)]);

/**
 * Checks one `sampling_params` object like SGLang (same ranges, same messages) and turns it
 * into engine parameters. Every client error is a 400 naming the key: an unknown key (SGLang
 * fails on it too), a wrong type, a value out of range, or a feature rl2 serve does not have
 * (penalties, constrained decoding) set away from its default.
 */
export function parseSamplingParams(
  raw: unknown,
  where = 'sampling_params',
  defaultMaxNewTokens: number | null = 128,
): ParsedSampling {
  const src = raw ?? {};
  if (typeof src !== 'object' || Array.isArray(src))
    throw badRequest(
      `${where || 'the request'} must be an object, got ${JSON.stringify(raw)}`,
      where,
    );
  const p = src as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (!KNOWN.has(key))
      throw badRequest(
        `${where} has an unknown key "${key}"; rl2 serve takes ${SUPPORTED.join(', ')}`,
        at(where, key),
      );
  }
  const number = (key: string, integer = false) => readNumber(p, key, where, integer);
  const flag = (key: string) => readFlag(p, key, where);
  const temperature = number('temperature') ?? 1;
  const topP = number('top_p') ?? 1;
  const topK = number('top_k', true) ?? -1;
  const maxNew =
    p.max_new_tokens === null ? null : (number('max_new_tokens', true) ?? defaultMaxNewTokens);
  const n = number('n', true) ?? 1;
  if (temperature < 0)
    throw badRequest(
      `temperature must be a non-negative finite number, got ${temperature}.`,
      at(where, 'temperature'),
    );
  if (!(topP > 0 && topP <= 1))
    throw badRequest(`top_p must be in (0, 1], got ${topP}.`, at(where, 'top_p'));
  if (topK < 1 && topK !== -1)
    throw badRequest(`top_k must be -1 (disable) or at least 1, got ${topK}.`, at(where, 'top_k'));
  if (maxNew !== null && maxNew < 0)
    throw badRequest(
      `max_new_tokens must be at least 0, got ${maxNew}.`,
      at(where, 'max_new_tokens'),
    );
  if (n < 1) throw badRequest(`n must be at least 1, got ${n}.`, at(where, 'n'));
  number('stream_interval', true);
  flag('spaces_between_special_tokens');
  checkDefaultOnly(p, where);
  const sampling: SamplingParams = { temperature, top_p: topP, top_k: topK };
  const stop = readStop(p.stop, at(where, 'stop'));
  if (stop.length > 0) sampling.stop = stop;
  const stopIds = readTokenIds(p.stop_token_ids, at(where, 'stop_token_ids'));
  if (stopIds) sampling.stop_token_ids = stopIds;
  const seed = number('sampling_seed', true);
  if (seed !== undefined) sampling.sampling_seed = seed;
  if (flag('ignore_eos')) sampling.ignore_eos = true;
  if (flag('no_stop_trim')) sampling.no_stop_trim = true;
  return {
    sampling,
    maxNewTokens: maxNew,
    n,
    skipSpecialTokens: flag('skip_special_tokens') ?? true,
  };
}

/** The name of `key` inside `where` ('' for top-level keys of the OpenAI API). */
function at(where: string, key: string): string {
  return where ? `${where}.${key}` : key;
}

function readNumber(
  p: Record<string, unknown>,
  key: string,
  where: string,
  integer: boolean,
): number | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
    throw badRequest(
      `${at(where, key)} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`,
      at(where, key),
    );
  }
  return v;
}

function readFlag(p: Record<string, unknown>, key: string, where: string): boolean | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean')
    throw badRequest(
      `${at(where, key)} must be true or false, got ${JSON.stringify(v)}`,
      at(where, key),
    );
  return v;
}

/** Range checks SGLang's verify() makes on the keys rl2 serve then refuses away from their default. */
function checkDefaultOnly(p: Record<string, unknown>, where: string): void {
  const ranges: Record<string, [number, number, string]> = {
    min_p: [0, 1, 'in [0, 1]'],
    frequency_penalty: [-2, 2, 'in [-2, 2]'],
    presence_penalty: [-2, 2, 'in [-2, 2]'],
    repetition_penalty: [Number.MIN_VALUE, 2, 'in (0, 2] (1.0 = no penalty)'],
    min_new_tokens: [0, Number.POSITIVE_INFINITY, 'at least 0'],
  };
  for (const [key, fallback] of Object.entries(DEFAULT_ONLY)) {
    const v = p[key];
    if (v === undefined || v === null || v === fallback) continue;
    const range = ranges[key];
    if (range) {
      const x = readNumber(p, key, where, key === 'min_new_tokens')!;
      if (x < range[0] || x > range[1])
        throw badRequest(`${key} must be ${range[2]}, got ${x}.`, at(where, key));
    }
    const what = range ? 'penalties and minimum lengths' : 'constrained decoding';
    throw badRequest(
      `${at(where, key)}=${JSON.stringify(v)} is not supported by rl2 serve (it has no ${what}); leave it at ${JSON.stringify(fallback)}`,
      at(where, key),
    );
  }
}

/** `stop`: a string or a list of strings; empty strings are dropped. */
export function readStop(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    throw badRequest(
      `${where} must be a string or a list of strings, got ${JSON.stringify(v)}`,
      where,
    );
  }
  return list.filter((s) => s !== '');
}

/** A list of token ids (non-negative integers), or undefined when absent. */
export function readTokenIds(v: unknown, where: string): number[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((t) => Number.isInteger(t) && t >= 0)) {
    throw badRequest(
      `${where} must be a list of token ids (non-negative integers), got ${JSON.stringify(v).slice(0, 200)}`,
      where,
    );
  }
  return v as number[];
}
