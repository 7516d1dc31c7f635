import { SeededRng } from '@rl2/data';
import { RolloutError } from '../errors.js';
import type {
  TokenGenerator,
  TokenGeneratorRequest,
  TokenGeneratorResult,
} from './embedded-engine.js';
import type { TokenLogprob } from './rollout-engine.js';

export interface ToyGeneratorOptions {
  /** Vocabulary size. Default 32. */
  vocabSize?: number;
  /** Generated tokens between two yields to the event loop (where pause/abort is seen). Default 1. */
  yieldEvery?: number;
  /** Detokenizer for `stop` strings: output ends at the first token whose text completes one. */
  decode?: (ids: readonly number[]) => string;
  /** Default max new tokens. Default 128. */
  maxNewTokens?: number;
  /** Milliseconds to wait at each yield, to stand in for a slow model (tests of abort, pause). Default 0. */
  delayMs?: number;
}

/**
 * A tiny deterministic language model for tests and demos, with no weights: the logits of the
 * next token are a hash of (previous token, candidate), sampled with temperature / top-k / top-p
 * by a PRNG seeded from (seed, prompt). Same request and seed => same tokens, on every engine
 * that wraps it. Logprobs are log softmax(logits / T) of the chosen ids (T = 1 when greedy).
 * Same request/result shape as the @rl2/models generator.
 */
export function createToyGenerator(options: ToyGeneratorOptions = {}): TokenGenerator {
  const vocabSize = options.vocabSize ?? 32;
  const yieldEvery = options.yieldEvery ?? 1;
  return {
    async generate(req: TokenGeneratorRequest): Promise<TokenGeneratorResult> {
      const stop = req.stop ?? [];
      if (stop.length > 0 && !options.decode) {
        throw new RolloutError(
          'INVALID_ARGUMENT',
          'stop strings need a decoder: pass decode to createToyGenerator or use stop_token_ids',
        );
      }
      const rng = new SeededRng(hashInts([req.seed ?? 0, ...req.inputIds]));
      const temperature = req.temperature ?? 1;
      const maxNew = req.maxNewTokens ?? options.maxNewTokens ?? 128;
      const outputIds: number[] = [];
      const logprobs: number[] = [];
      const top: TokenLogprob[][] = [];
      const done = (
        type: 'stop' | 'length' | 'abort',
        matched?: number | string,
      ): TokenGeneratorResult => ({
        outputIds,
        logprobs,
        finishReason: matched === undefined ? { type } : { type, matched },
        ...(req.topLogprobs ? { topLogprobs: top } : {}),
      });
      let prev = req.inputIds.length > 0 ? req.inputIds[req.inputIds.length - 1] : 0;
      while (outputIds.length < maxNew) {
        if (req.signal?.aborted) return done('abort');
        const t = temperature > 0 ? temperature : 1;
        const logits = Array.from(
          { length: vocabSize },
          (_, v) => ((hashInts([prev, v, outputIds.length]) % 1000) / 1000) * 4,
        );
        const logp = logSoftmax(logits.map((x) => x / t));
        const token =
          temperature > 0 ? sample(logp, req.topK ?? 0, req.topP ?? 1, rng.next()) : argmax(logp);
        outputIds.push(token);
        logprobs.push(logp[token]);
        const best = req.topLogprobs ? mostLikely(logp, req.topLogprobs) : undefined;
        if (best) top.push(best);
        req.onToken?.({ id: token, logprob: logp[token], ...(best ? { top: best } : {}) });
        prev = token;
        if (req.stopTokenIds?.includes(token)) return done('stop', token);
        const text = stop.length > 0 && options.decode ? options.decode(outputIds) : '';
        const hit = stop.find((x) => x !== '' && text.includes(x));
        if (hit !== undefined) return done('stop', hit);
        if (outputIds.length % yieldEvery === 0) await pause(options.delayMs ?? 0);
      }
      return done('length');
    },
  };
}

function pause(ms: number): Promise<void> {
  return new Promise((r) => (ms > 0 ? setTimeout(r, ms) : setImmediate(r)));
}

function logSoftmax(x: number[]): number[] {
  const m = Math.max(...x);
  const lse = m + Math.log(x.reduce((s, v) => s + Math.exp(v - m), 0));
  return x.map((v) => v - lse);
}

/** The `n` most likely ids of `logp`, best first (ties: lower id first). */
function mostLikely(logp: number[], n: number): TokenLogprob[] {
  return logp
    .map((logprob, id) => ({ id, logprob }))
    .sort((a, b) => b.logprob - a.logprob || a.id - b.id)
    .slice(0, n);
}

function argmax(x: number[]): number {
  let best = 0;
  for (let i = 1; i < x.length; i += 1) if (x[i] > x[best]) best = i;
  return best;
}

/** Samples from the top-k, then top-p (nucleus) subset of `logp`, using one uniform `u` in [0, 1). */
function sample(logp: number[], topK: number, topP: number, u: number): number {
  let ids = logp.map((_, i) => i).sort((a, b) => logp[b] - logp[a] || a - b);
  if (topK > 0) ids = ids.slice(0, topK);
  const p = ids.map((i) => Math.exp(logp[i]));
  let keep = ids.length;
  let acc = 0;
  for (let j = 0; j < ids.length; j += 1) {
    acc += p[j];
    if (acc >= topP) {
      keep = j + 1;
      break;
    }
  }
  const total = p.slice(0, keep).reduce((s, v) => s + v, 0);
  let r = u * total;
  for (let j = 0; j < keep; j += 1) {
    r -= p[j];
    if (r < 0) return ids[j];
  }
  return ids[keep - 1];
}

/** FNV-1a over 32-bit integers. */
function hashInts(xs: number[]): number {
  let h = 0x811c9dc5;
  for (const x of xs) {
    h ^= x & 0xffffffff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
