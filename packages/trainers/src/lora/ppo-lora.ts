import {
  attachLora,
  type DecoderModel,
  isLoraParam,
  type LoraSpec,
  type LoraModel,
  type ParamMap,
  peftLoraConfig,
  writePeftAdapter,
} from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import type { ModelSection } from '../config/sections.js';
import type { RankLayout } from '../parallel-model/rank-layout.js';
import type { TrainedModel } from '../parallel-model/trained-model.js';
import { layOutLora } from './lay-out-lora.js';
import { ADAPTER_FOLDER, type LoraPlacement, loraSaver, loraSpecOf } from './lora-run.js';
import { adapterTensors, fullLoraParams } from './lora-tensors.js';

/** Checkpoint folders of the PPO adapters: the actor's beside `model/`, the critic's beside `critic/`. */
export const PPO_ADAPTER_FOLDERS = { actor: ADAPTER_FOLDER, critic: 'critic_adapter' } as const;

/** One PPO model trained as LoRA adapters: what its worker trains, and how it is saved and merged. */
export interface PpoLora {
  readonly lora: LoraModel;
  /** The adapters (and a critic's score head) as the worker trains them. */
  readonly trained: TrainedModel;
  /** The frozen base as a worker of its own (the reference), sharing the weights; disposing it frees nothing. */
  baseWorkerModel(): TrainedModel;
  /** The full merged weights (W + s B A), e.g. to write the actor for an SGLang server (a collective over tp). */
  merged(): { params: ParamMap; dispose(): void };
  /**
   * Under FSDP, for an engine that generates from the kept full model: `full` with the trained
   * tensors gathered onto it (a collective), and `refresh` to gather them again after a step.
   */
  fullGenerator(full: DecoderModel): { model: DecoderModel; refresh(): void; dispose(): void };
  /** Writes the PEFT adapter folder `dir` on `isMain` (the SGLang adapter sync; a collective over tp). */
  writeAdapter(dir: string, isMain: boolean): Promise<void>;
  /**
   * Writes the PEFT adapter beside `modelDir` (and, with lora.save_merged, the merged model in
   * it) from `full`, what `trained.fullParams()` gathered.
   */
  save(
    modelDir: string,
    saveMerged: (dir: string, params: ParamMap) => Promise<void>,
    full: ParamMap,
  ): Promise<void>;
}

/** True when `<key>.lora.rank` > 0: the model loads from its model_name on a resume too (the checkpoint holds adapters). */
export const usesLora = (section: ModelSection) => section.lora.rank > 0;

/**
 * LoRA on a PPO model, `loaded` laid out by `layout` (data, tensor, context and FSDP parallel,
 * see `layOutLora`), or undefined with `<key>.lora.rank` 0. New adapters seeded by `seed`, or
 * the resumed checkpoint's. `keepFull` keeps the loaded tensors (the engine generates with them).
 */
export function ppoLora(
  loaded: DecoderModel,
  layout: RankLayout,
  section: ModelSection,
  key: 'actor' | 'critic',
  placement: Omit<LoraPlacement, 'folder' | 'tp'>,
  options: { keepFull?: boolean } = {},
): PpoLora | undefined {
  const spec = loraSpecOf(section);
  if (!spec) return undefined;
  const folder = PPO_ADAPTER_FOLDERS[key];
  const { tp } = layout;
  const laid = layOutLora(loaded, layout, spec, section, key, { ...placement, folder }, options);
  const { lora, gather } = laid;
  const config = peftLoraConfig(
    spec,
    section.model_name,
    lora.base.config.head,
    lora.base.config.tieWordEmbeddings,
  );
  return {
    lora,
    trained: laid.trained,
    baseWorkerModel: () => laid.base,
    merged: () => {
      const full = fullLoraParams(gather, tp, true);
      const params = new Map([...full.params].filter(([n]) => !isLoraParam(n)));
      return { params, dispose: full.dispose };
    },
    fullGenerator: (full) => fullGenerator(full, spec, () => fullLoraParams(gather, tp), lora),
    writeAdapter: async (dir, isMain) => {
      const full = fullLoraParams(gather, tp);
      try {
        if (isMain) await writePeftAdapter(dir, adapterTensors(lora, full.params), config);
      } finally {
        full.dispose();
      }
    },
    save: (modelDir, saveMerged, full) =>
      loraSaver(lora, section, saveMerged, folder)(modelDir, full),
  };
}

/** See `PpoLora.fullGenerator`: `gathered` gives the full trained tensors. */
function fullGenerator(
  full: DecoderModel,
  spec: LoraSpec,
  gathered: () => { params: ParamMap; dispose(): void },
  lora: LoraModel,
): { model: DecoderModel; refresh(): void; dispose(): void } {
  const first = gathered();
  const trained = adapterTensors(lora, first.params);
  const adapters: ParamMap = new Map(
    [...trained].filter(([n]) => isLoraParam(n)).map(([n, t]) => [n, tf.variable(t, true)]),
  );
  const generator = attachLora(
    full,
    adapters,
    spec,
    new Map([...trained].filter(([n]) => !isLoraParam(n))),
  );
  first.dispose();
  return {
    model: generator.model,
    refresh: () => {
      const now = gathered();
      for (const [name, t] of adapterTensors(lora, now.params))
        (generator.model.params.get(name) as tf.Variable).assign(t);
      now.dispose();
    },
    dispose: () => tf.dispose([...generator.adapters.values()]),
  };
}
