import type { WeightDtype } from '@rl2/engine';
import {
  type DecoderModel,
  type Generator,
  type ModelConfig,
  createGenerator,
  defaultWeightDtype,
  disposeParams,
  loadModel,
} from '@rl2/models';
import { createEmbeddedEngine } from './embedded-engine.js';
import type { RolloutEngine } from './rollout-engine.js';
import { checkServedArchitecture } from './served-architecture.js';

export interface CheckpointEngineOptions {
  /** Detokenizer, for stop strings. */
  decode?: (ids: readonly number[]) => string;
  /** Rows decoded together by the continuous-batching generator (default 16). */
  maxBatch?: number;
  /** Base seed of requests that give no sampling_seed (default 0). */
  seed?: number;
  /**
   * Weight matrices' element type while generating (`rl2 serve --dtype`); 'auto' (default):
   * bfloat16 for a bfloat16 checkpoint, else float32, decided per loaded checkpoint.
   */
  weightDtype?: WeightDtype | 'auto';
}

/** An engine that owns its model: `updateWeights(path)` loads another checkpoint. */
export interface CheckpointEngine extends RolloutEngine {
  /** The checkpoint folder currently served. */
  readonly modelPath: string;
  /** Its config.json (vocabulary size, context length). */
  readonly modelConfig: ModelConfig;
  /** The weight dtype the current checkpoint generates with (`weightDtype`, 'auto' resolved). */
  readonly weightDtype: WeightDtype;
  /** Parameter bytes each rank holds: one entry, or one per tensor-parallel rank. */
  readonly rankParamBytes: readonly number[];
  /** Waits for running requests and frees the weights. */
  close(): Promise<void>;
}

/**
 * The engine behind `rl2 serve --model PATH`: loads an HF checkpoint folder with @rl2/models
 * and generates with its KV-cache continuous-batching generator. `updateWeights(path)` (POST
 * /update_weights_from_disk) loads the new checkpoint, sends new requests to it, and frees the
 * old weights once the requests already running on them finish.
 * (The PPO trainer's hybrid engine needs none of this: it wraps a generator over the actor's
 * own weights with `createEmbeddedEngine`, so updates are seen in place.)
 */
export async function loadCheckpointEngine(
  modelPath: string,
  options: CheckpointEngineOptions = {},
): Promise<CheckpointEngine> {
  const open = async (path: string) => {
    const { model, generationConfig } = await loadModel(path);
    const eos = generationConfig?.eosTokenIds;
    const want = options.weightDtype ?? 'auto';
    const weightDtype = want === 'auto' ? defaultWeightDtype(model) : want;
    const generator = createGenerator(model, {
      weightDtype,
      maxBatch: options.maxBatch,
      seed: options.seed,
      decode: options.decode,
      ...(eos && eos.length > 0 ? { eosTokenIds: eos } : {}),
    });
    return { path, model, generator, weightDtype };
  };
  let current: {
    path: string;
    model: DecoderModel;
    generator: Generator;
    weightDtype: WeightDtype;
  } = await open(modelPath);
  const retire = async (old: typeof current) => {
    await old.generator.idle();
    disposeParams(old.model.params);
  };
  const engine = createEmbeddedEngine({
    generator: { generate: (request) => current.generator.generate(request) },
    loadWeights: async (path) => {
      await checkServedArchitecture(current.model.config, path);
      const next = await open(path);
      const old = current;
      current = next;
      void retire(old);
    },
  });
  return {
    ...engine,
    get modelPath() {
      return current.path;
    },
    get modelConfig() {
      return current.model.config;
    },
    get weightDtype() {
      return current.weightDtype;
    },
    get rankParamBytes() {
      let bytes = 0;
      for (const t of current.model.params.values()) bytes += t.size * 4;
      return [bytes];
    },
    async close() {
      await retire(current);
    },
  };
}
