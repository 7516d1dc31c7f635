import type {
  FinishReason,
  GeneratedToken,
  SamplingParams,
  TokenLogprob,
} from '../inference/rollout-engine.js';
import { RolloutError } from '../errors.js';
import type { ServerContext } from './server-context.js';

/** One sequence to generate: a prompt, its sampling parameters (max_new_tokens set) and its id. */
export interface GenerationItem {
  rid: string;
  inputIds: number[];
  /** The LoRA adapter by name (SGLang's `lora_path`), or undefined for the base model. */
  lora?: string;
  sampling: SamplingParams & { max_new_tokens: number };
  /** Most likely tokens to report per step (0: none). */
  topLogprobs: number;
}

/** What one item produced; on abort (pause, /abort_request, client gone) the tokens so far. */
export interface GenerationOutcome {
  tokenIds: number[];
  logprobs: number[];
  topLogprobs?: TokenLogprob[][];
  finishReason: FinishReason;
  matched?: number | string;
}

/**
 * Runs one item on the engine, registered under its rid so it can be aborted, and reports
 * each token to `onToken` as the engine produces it. An aborted item resolves with finish
 * reason 'abort' and the tokens generated so far (as SGLang answers aborted requests).
 * max_new_tokens 0 answers at once with no tokens (SGLang allows it).
 */
export async function runGeneration(
  ctx: ServerContext,
  item: GenerationItem,
  gone: AbortSignal,
  onToken?: (token: GeneratedToken) => void,
): Promise<GenerationOutcome> {
  if (item.sampling.max_new_tokens === 0)
    return {
      tokenIds: [],
      logprobs: [],
      finishReason: 'length',
      ...(item.topLogprobs ? { topLogprobs: [] } : {}),
    };
  const controller = new AbortController();
  const abort = () => controller.abort();
  gone.addEventListener('abort', abort, { once: true });
  ctx.registry.add(item.rid, controller);
  const seen: GeneratedToken[] = [];
  try {
    return await ctx.engine.generate({
      inputIds: item.inputIds,
      ...(item.lora ? { lora: item.lora } : {}),
      sampling: item.sampling,
      signal: controller.signal,
      ...(item.topLogprobs ? { topLogprobs: item.topLogprobs } : {}),
      onToken: (t) => {
        seen.push(t);
        onToken?.(t);
      },
    });
  } catch (e) {
    if (!(controller.signal.aborted && e instanceof RolloutError && e.code === 'ENGINE_ABORTED'))
      throw e;
    return {
      tokenIds: seen.map((t) => t.id),
      logprobs: seen.map((t) => t.logprob),
      finishReason: 'abort',
      ...(item.topLogprobs ? { topLogprobs: seen.map((t) => t.top ?? []) } : {}),
    };
  } finally {
    gone.removeEventListener('abort', abort);
    ctx.registry.delete(item.rid, controller);
  }
}

/** The answer text: decoded ids, cut before the stop string that ended it unless no_stop_trim. */
export function outcomeText(
  ctx: ServerContext,
  out: GenerationOutcome,
  skipSpecialTokens: boolean,
  noStopTrim: boolean,
): string {
  const text = ctx.decode(out.tokenIds, skipSpecialTokens);
  if (noStopTrim || typeof out.matched !== 'string') return text;
  const at = text.indexOf(out.matched);
  return at >= 0 ? text.slice(0, at) : text;
}

/** Seed of the j-th parallel sample (`n`) of a request: its own seed, then distinct derived ones. */
export function sampleSeed(seed: number | undefined, j: number): number | undefined {
  if (seed === undefined || j === 0) return seed;
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(j, 0xc2b2ae35)) >>> 0;
}
