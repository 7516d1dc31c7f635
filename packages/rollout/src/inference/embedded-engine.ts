import type { GenerationRequest } from '@rl2/models';
import { RolloutError } from '../errors.js';
import type {
  EngineHealth,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  RolloutEngine,
  TokenLogprob,
} from './rollout-engine.js';

/**
 * What the embedded engine asks an in-process generator for: SamplingParams in camelCase, the
 * shape of the @rl2/models generator's `GenerationRequest`.
 */
export interface TokenGeneratorRequest extends GenerationRequest {
  /** The LoRA adapter to generate with, by name (undefined: the base model). */
  lora?: string;
}

/** What an in-process generator answers: `outputIds` [N] and their `logprobs` [N]. */
export interface TokenGeneratorResult {
  outputIds: number[];
  logprobs: number[];
  finishReason: { type: FinishReason; matched?: number | string };
  topLogprobs?: TokenLogprob[][];
}

/**
 * The structural shape the embedded engine drives: any object with an async `generate`
 * (the @rl2/models continuous-batching generator, or `createToyGenerator` in tests).
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
}

/**
 * RolloutEngine over an in-process generator (no server). pause() aborts in-flight requests
 * (they resolve with finishReason 'abort' and their partial tokens) and holds new ones until
 * continue().
 */
export function createEmbeddedEngine(options: EmbeddedEngineOptions): RolloutEngine {
  const { generator, loadWeights, flushCache } = options;
  const inFlight = new Set<AbortController>();
  let resume: { promise: Promise<void>; release: () => void } | undefined;

  return {
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      const s = request.sampling;
      while (resume) await resume.promise;
      if (request.signal?.aborted)
        throw new RolloutError('ENGINE_ABORTED', 'generate was aborted by the caller');
      const controller = new AbortController();
      const onCallerAbort = () => controller.abort(request.signal?.reason);
      request.signal?.addEventListener('abort', onCallerAbort, { once: true });
      inFlight.add(controller);
      let out: TokenGeneratorResult;
      try {
        out = await generator.generate({
          inputIds: request.inputIds,
          ...(request.lora ? { lora: request.lora } : {}),
          maxNewTokens: s.max_new_tokens,
          temperature: s.temperature,
          topP: s.top_p,
          topK: s.top_k === undefined || s.top_k < 0 ? undefined : s.top_k,
          stopTokenIds: s.stop_token_ids,
          stop: s.stop,
          noStopTrim: s.no_stop_trim,
          ignoreEos: s.ignore_eos,
          seed: s.sampling_seed,
          signal: controller.signal,
          ...(request.topLogprobs ? { topLogprobs: request.topLogprobs } : {}),
          ...(request.onToken ? { onToken: request.onToken } : {}),
        });
      } catch (e) {
        if (!controller.signal.aborted) throw e;
        out = { outputIds: [], logprobs: [], finishReason: { type: 'abort' } };
      } finally {
        inFlight.delete(controller);
        request.signal?.removeEventListener('abort', onCallerAbort);
      }
      if (request.signal?.aborted)
        throw new RolloutError('ENGINE_ABORTED', 'generate was aborted by the caller');
      if (out.outputIds.length !== out.logprobs.length) {
        throw new RolloutError(
          'INVALID_ARGUMENT',
          `the generator returned ${out.outputIds.length} ids but ${out.logprobs.length} logprobs`,
        );
      }
      const { type, matched } = out.finishReason;
      return {
        tokenIds: out.outputIds,
        logprobs: out.logprobs,
        finishReason: type,
        ...(matched !== undefined ? { matched } : {}),
        ...(out.topLogprobs ? { topLogprobs: out.topLogprobs } : {}),
      };
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
