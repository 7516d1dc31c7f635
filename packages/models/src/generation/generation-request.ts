import type { SamplingParams, TokenLogprob } from './sample-token.js';

/** One generation request: token ids in, token ids out (as SGLang's /generate with input_ids). */
export interface GenerationRequest extends SamplingParams {
  inputIds: readonly number[];
  /** Default: the generator's `maxNewTokens` (128). */
  maxNewTokens?: number;
  /** Finish with reason `stop` when one of these is sampled (it stays in the output). */
  stopTokenIds?: readonly number[];
  /** Finish with reason `stop` when the decoded output contains one (needs the generator's `decode`). */
  stop?: readonly string[];
  /** Keep the matched stop string in `text` (default: cut it off). */
  noStopTrim?: boolean;
  /** Do not stop at the model's eos tokens. */
  ignoreEos?: boolean;
  /** Seed of this request's sampling stream (default: derived from the generator seed and a counter). */
  seed?: number;
  /** Aborting finishes the request with reason `abort` and the tokens generated so far. */
  signal?: AbortSignal;
  /** Also return this many most likely tokens (with logprobs) at each step. Default 0. */
  topLogprobs?: number;
  /** Called with each token as it is sampled (for streaming); a throw fails this request only. */
  onToken?: (token: GeneratedToken) => void;
}

/** One sampled token as `onToken` sees it; `top` only with `topLogprobs`. */
export interface GeneratedToken {
  id: number;
  logprob: number;
  top?: TokenLogprob[];
}

/** Why a request finished; `matched` is the stop token id or stop string. */
export type FinishReason =
  | { type: 'stop'; matched: number | string }
  | { type: 'length' }
  | { type: 'abort' };

/** What `generate` resolves to. */
export interface GenerationResult {
  outputIds: number[];
  /** log p(token) under log_softmax(logits / temperature), one per output id. */
  logprobs: number[];
  finishReason: FinishReason;
  /** decode(outputIds), trimmed at the stop string unless noStopTrim; only with `decode`. */
  text?: string;
  promptTokens: number;
  /** With `topLogprobs`: the most likely tokens at each step, [outputIds.length][topLogprobs]. */
  topLogprobs?: TokenLogprob[][];
}
