import { RolloutError } from '../errors.js';
import type { EngineHealth, FinishReason, GenerateRequest, GenerateResult, RolloutEngine } from './rollout-engine.js';

/** What the embedded engine asks an in-process generator for (camelCase SamplingParams). */
export interface TokenGeneratorRequest {
  inputIds: number[];
  maxNewTokens: number;
  temperature: number;
  topP: number;
  /** 0: no top-k cut. */
  topK: number;
  stopTokenIds: number[];
  seed?: number;
  /** Aborted on pause/cancel: the generator should resolve early with finishReason 'abort' and the tokens so far. */
  signal: AbortSignal;
}

/** What an in-process generator answers: `tokenIds` [N], `logprobs` [N]. */
export interface TokenGeneratorResult {
  tokenIds: number[];
  logprobs: number[];
  finishReason: FinishReason;
}

/**
 * The structural shape the embedded engine drives: any object with an async `generate`
 * (the @rl2/models continuous-batching generator, or a fake in tests).
 */
export interface TokenGenerator {
  generate(request: TokenGeneratorRequest): Promise<TokenGeneratorResult>;
}

export interface EmbeddedEngineOptions {
  generator: TokenGenerator;
  /** Loads an HF checkpoint into the generator. Omit for a hybrid engine that shares the trainer's weights in-process. */
  loadWeights?: (modelPath: string) => Promise<void>;
  /** Drops the generator's prefix/KV cache. */
  flushCache?: () => Promise<void>;
  /** Needed only for `stop` strings: the output is cut after the first token whose text completes a stop string. */
  decode?: (ids: number[]) => string;
  /** Default max_new_tokens when a request gives none. Default 256. */
  defaultMaxNewTokens?: number;
}

/**
 * RolloutEngine over an in-process generator (no server). pause() aborts in-flight requests
 * (they resolve with finishReason 'abort' and their partial tokens) and holds new ones until
 * continue().
 */
export function createEmbeddedEngine(options: EmbeddedEngineOptions): RolloutEngine {
  const { generator, loadWeights, flushCache, decode, defaultMaxNewTokens = 256 } = options;
  const inFlight = new Set<AbortController>();
  let resume: { promise: Promise<void>; release: () => void } | undefined;

  return {
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      const s = request.sampling;
      if (s.stop && s.stop.length > 0 && !decode) {
        throw new RolloutError('INVALID_ARGUMENT', 'sampling stop strings need a decode function: pass `decode` to createEmbeddedEngine or use stop_token_ids');
      }
      while (resume) await resume.promise;
      if (request.signal?.aborted) throw new RolloutError('ENGINE_ABORTED', 'generate was aborted by the caller');
      const controller = new AbortController();
      const onCallerAbort = () => controller.abort(request.signal?.reason);
      request.signal?.addEventListener('abort', onCallerAbort, { once: true });
      inFlight.add(controller);
      let out: TokenGeneratorResult;
      try {
        out = await generator.generate({
          inputIds: request.inputIds,
          maxNewTokens: s.max_new_tokens ?? defaultMaxNewTokens,
          temperature: s.temperature ?? 1,
          topP: s.top_p ?? 1,
          topK: s.top_k === undefined || s.top_k < 0 ? 0 : s.top_k,
          stopTokenIds: s.stop_token_ids ?? [],
          seed: s.sampling_seed,
          signal: controller.signal,
        });
      } catch (e) {
        if (!controller.signal.aborted) throw e;
        out = { tokenIds: [], logprobs: [], finishReason: 'abort' };
      } finally {
        inFlight.delete(controller);
        request.signal?.removeEventListener('abort', onCallerAbort);
      }
      if (request.signal?.aborted) throw new RolloutError('ENGINE_ABORTED', 'generate was aborted by the caller');
      return s.stop && s.stop.length > 0 && decode ? cutAtStopString(out, s.stop, decode) : { ...out };
    },
    async updateWeights(modelPath: string): Promise<void> {
      if (loadWeights) await loadWeights(modelPath);
      if (flushCache) await flushCache();
    },
    async flushCache(): Promise<void> {
      if (flushCache) await flushCache();
    },
    async health(): Promise<EngineHealth> {
      return { ok: true, backends: [{ name: 'embedded', ok: true }] };
    },
    async pause(): Promise<void> {
      if (!resume) {
        let release = () => {};
        const promise = new Promise<void>((r) => {
          release = r;
        });
        resume = { promise, release };
      }
      for (const c of inFlight) c.abort(new RolloutError('ENGINE_ABORTED', 'engine paused'));
    },
    async continue(): Promise<void> {
      const r = resume;
      resume = undefined;
      r?.release();
    },
  };
}

/** Keeps tokens up to the first one whose decoded prefix contains a stop string. */
function cutAtStopString(out: TokenGeneratorResult, stop: string[], decode: (ids: number[]) => string): GenerateResult {
  for (let n = 1; n <= out.tokenIds.length; n += 1) {
    const text = decode(out.tokenIds.slice(0, n));
    if (stop.some((s) => s.length > 0 && text.includes(s))) {
      return { tokenIds: out.tokenIds.slice(0, n), logprobs: out.logprobs.slice(0, n), finishReason: 'stop' };
    }
  }
  return { ...out };
}
