import type { Tokenizer } from '@rl2/data';
import { type DecoderModel, type GenerationConfig, createGenerator } from '@rl2/models';
import { type RolloutEngine, type SamplingParams, createEmbeddedEngine, createSGLangEngine } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import type { PpoConfig } from './ppo-config.js';

/** rollout.*_sampling_params as the engine takes them (SGLang names; null stop dropped). */
export function samplingParams(p: PpoConfig['rollout']['train_sampling_params']): SamplingParams {
  return {
    temperature: p.temperature,
    top_p: p.top_p,
    top_k: p.top_k,
    max_new_tokens: p.max_new_tokens,
    no_stop_trim: p.no_stop_trim,
    ...(p.stop ? { stop: p.stop } : {}),
  };
}

/**
 * The rollout engine of `rl2 ppo`. Embedded (default): the KV-cache continuous-batching
 * generator over the actor's own parameters (hybrid engine, DeepSpeed-Chat style), so an
 * optimizer step is seen by the next rollout with no copy. SGLang: servers at
 * rollout.server_urls, synced through /update_weights_from_disk; the API key of servers started
 * with --api-key comes from the RL2_API_KEY environment variable (kept out of config.yaml).
 */
export function createPpoEngine(cfg: PpoConfig['rollout'], actor: DecoderModel, generationConfig: GenerationConfig | undefined, tokenizer: Tokenizer): RolloutEngine {
  if (cfg.engine === 'sglang') {
    if (cfg.server_urls.length === 0) {
      throw new TrainersError('INVALID_ARGUMENT', 'rollout.engine=sglang needs rollout.server_urls=[http://host:port] (an SGLang server or `rl2 serve --model PATH`)');
    }
    const apiKey = process.env.RL2_API_KEY;
    return createSGLangEngine({ urls: cfg.server_urls, ...(apiKey ? { apiKey } : {}) });
  }
  const eos = generationConfig?.eosTokenIds?.length ? generationConfig.eosTokenIds : [tokenizer.eosTokenId];
  const generator = createGenerator(actor, { maxBatch: cfg.max_batch, decode: (ids) => tokenizer.decode(ids), eosTokenIds: eos });
  return createEmbeddedEngine({ generator });
}
