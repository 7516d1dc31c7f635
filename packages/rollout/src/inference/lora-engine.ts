import {
  type DecoderModel,
  type Generator,
  type ModelConfig,
  type ParamMap,
  createGenerator,
  disposeParams,
  loadModel,
} from '@rl2/models';
import { RolloutError } from '../errors.js';
import type { CheckpointEngine, CheckpointEngineOptions } from './checkpoint-engine.js';
import { createEmbeddedEngine } from './embedded-engine.js';
import { openLoraAdapter } from './open-lora-adapter.js';
import { checkServedArchitecture } from './served-architecture.js';

/** A checkpoint engine that also serves LoRA adapters by name over its one copy of the base weights. */
export interface LoraCheckpointEngine extends CheckpointEngine {
  /** The adapters served: name -> the PEFT folder it was loaded from. */
  readonly loraAdapters: ReadonlyMap<string, string>;
  /** Loads (or replaces) the PEFT LoRA adapter folder `path` as `name` (SGLang's /load_lora_adapter). */
  loadLoraAdapter(name: string, path: string): Promise<void>;
  /** Stops serving `name`; its weights go once its running requests end. */
  unloadLoraAdapter(name: string): Promise<void>;
}

interface Served {
  path: string;
  model: DecoderModel;
  /** An adapter's own tensors (its LoRA matrices and modules_to_save copies), freed with it. */
  adapters?: ParamMap;
  generator: Generator;
}

/**
 * `rl2 serve --model BASE --lora NAME=DIR ...`: the base checkpoint and PEFT LoRA adapters on it
 * (as SGLang's `--lora-paths`). Each adapter shares the base weights (W + s B A x computed on
 * the fly: no merged copy) and has its own continuous-batching generator; a request picks one
 * by name (`lora_path`), none: the base. `updateWeights` loads a new base and puts the
 * adapters back on it.
 */
export async function loadLoraCheckpointEngine(
  modelPath: string,
  adapters: readonly { name: string; path: string }[],
  options: CheckpointEngineOptions = {},
): Promise<LoraCheckpointEngine> {
  const generatorOf = (model: DecoderModel, eos?: number[]) =>
    createGenerator(model, {
      maxBatch: options.maxBatch,
      seed: options.seed,
      decode: options.decode,
      ...(eos && eos.length > 0 ? { eosTokenIds: eos } : {}),
    });
  let eos: number[] | undefined;
  const openBase = async (path: string): Promise<Served> => {
    const { model, generationConfig } = await loadModel(path);
    eos = generationConfig?.eosTokenIds;
    return { path, model, generator: generatorOf(model, eos) };
  };
  const openAdapter = (on: DecoderModel, path: string): Served => {
    const lora = openLoraAdapter(on, path);
    return {
      path,
      model: lora.model,
      adapters: lora.adapters,
      generator: generatorOf(lora.model, eos),
    };
  };
  const freeAdapter = async (old: Served) => {
    await old.generator.idle();
    for (const v of old.adapters?.values() ?? []) v.dispose();
  };
  let base = await openBase(modelPath);
  const served = new Map<string, Served>();
  for (const a of adapters) served.set(a.name, openAdapter(base.model, a.path));
  const pick = (name: string | undefined): Served => {
    if (name === undefined) return base;
    const s = served.get(name);
    if (!s)
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `no LoRA adapter "${name}" is loaded (loaded: ${[...served.keys()].join(', ') || 'none'}); POST /load_lora_adapter first`,
      );
    return s;
  };
  const engine = createEmbeddedEngine({
    generator: { generate: (request) => pick(request.lora).generator.generate(request) },
    loadWeights: async (path) => {
      await checkServedArchitecture(base.model.config, path);
      const next = await openBase(path);
      const old = { base, adapters: [...served.values()] };
      base = next;
      for (const [name, s] of served) served.set(name, openAdapter(next.model, s.path));
      for (const a of old.adapters) void freeAdapter(a);
      void old.base.generator.idle().then(() => disposeParams(old.base.model.params));
    },
  });
  return {
    ...engine,
    // adapters generate through the tfjs decoder over float32 weights (the fused decoder takes dense ones)
    weightDtype: 'float32' as const,
    get modelPath() {
      return base.path;
    },
    get modelConfig(): ModelConfig {
      return base.model.config;
    },
    get rankParamBytes() {
      let bytes = 0;
      for (const t of base.model.params.values()) bytes += t.size * 4;
      for (const s of served.values())
        for (const t of s.adapters?.values() ?? []) bytes += t.size * 4;
      return [bytes];
    },
    get loraAdapters() {
      return new Map([...served].map(([name, s]) => [name, s.path]));
    },
    async loadLoraAdapter(name, path) {
      const next = openAdapter(base.model, path);
      const old = served.get(name);
      served.set(name, next);
      if (old) void freeAdapter(old);
    },
    async unloadLoraAdapter(name) {
      const old = pick(name);
      served.delete(name);
      await freeAdapter(old);
    },
    async close() {
      await Promise.all([...served.values()].map(freeAdapter));
      await base.generator.idle();
      disposeParams(base.model.params);
    },
  };
}
