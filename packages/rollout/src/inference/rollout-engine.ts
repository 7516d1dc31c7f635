/** Why a generation ended: a stop token/string, the max_new_tokens cap, or an abort (pause, cancel). */
export type FinishReason = 'stop' | 'length' | 'abort';

/**
 * Sampling parameters, named as in SGLang's `sampling_params` so they go over the wire unchanged.
 * temperature 0 means greedy decoding.
 */
export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  /** -1 or undefined: no top-k cut. */
  top_k?: number;
  max_new_tokens?: number;
  /** Stop strings (need an engine that can decode text). */
  stop?: string[];
  stop_token_ids?: number[];
  /** Keep the stop token in the output (RL2 trains on exactly the generated ids). */
  no_stop_trim?: boolean;
  /** Do not stop at the model's end-of-sequence tokens. */
  ignore_eos?: boolean;
  /** Seed of this request's sampler (SGLang's `sampling_seed`): same seed, same tokens. */
  sampling_seed?: number;
}

/** A token id and its log-probability under the distribution the engine sampled from. */
export interface TokenLogprob {
  id: number;
  logprob: number;
}

/** One generated token as `onToken` sees it; `top` only when `topLogprobs` was asked for. */
export interface GeneratedToken {
  id: number;
  logprob: number;
  top?: TokenLogprob[];
}

/** One token-in/token-out generation request. */
export interface GenerateRequest {
  inputIds: number[];
  /** Name of the LoRA adapter to generate with (SGLang's `lora_path`); undefined: the base model. */
  lora?: string;
  sampling: SamplingParams;
  /** Cancels the request; the engine rejects with RolloutError('ENGINE_ABORTED'). */
  signal?: AbortSignal;
  /** Also return the this many most likely tokens at each step (SGLang's `top_logprobs_num`). */
  topLogprobs?: number;
  /** Called with each token as it is generated, where the engine can (in-process engines); for streaming. */
  onToken?: (token: GeneratedToken) => void;
}

/** What the engine generated: `tokenIds` [N] and the engine's `logprobs` [N] of those ids. */
export interface GenerateResult {
  tokenIds: number[];
  logprobs: number[];
  finishReason: FinishReason;
  /** With finishReason 'stop': the stop token id or stop string that ended it, when the engine says. */
  matched?: number | string;
  /** With `topLogprobs`: the most likely tokens at each step, [N][topLogprobs]. */
  topLogprobs?: TokenLogprob[][];
}

/** Engine health as reported by `health()`. */
export interface EngineHealth {
  ok: boolean;
  /** One entry per backend (a URL for HTTP engines, 'embedded' otherwise). */
  backends: { name: string; ok: boolean; error?: string }[];
}

/**
 * The one interface the rollout loop and trainers talk to. Implementations: the SGLang HTTP
 * client (`createSGLangEngine`) and the in-process adapter (`createEmbeddedEngine`).
 */
export interface RolloutEngine {
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** Load new weights (an HF checkpoint folder both sides can read) and flush the KV cache. */
  updateWeights(modelPath: string): Promise<void>;
  flushCache(): Promise<void>;
  health(): Promise<EngineHealth>;
  /** Stop generating: in-flight requests finish with 'abort' (their partial tokens returned). */
  pause(): Promise<void>;
  /** Resume after `pause()`. */
  continue(): Promise<void>;
}
