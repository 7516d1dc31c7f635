import {
  isLoraParam,
  type LoraModel,
  type ParamMap,
  peftLoraConfig,
  writePeftAdapter,
} from '@rl2/models';
import type { ModelSection } from '../config/sections.js';
import type { TrainedModel } from '../parallel-model/trained-model.js';
import {
  ADAPTER_FOLDER,
  adapterTensors,
  fullLoraParams,
  type LoraPlacement,
  loraSaver,
  loraSpecOf,
  loraTrainedModel,
  openLoraModel,
} from './lora-run.js';

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
 * LoRA on a PPO model laid out by `laidOut` (data, tensor and context parallel; `tp` its tensor
 * group), or undefined with `<key>.lora.rank` 0. New adapters seeded by `seed`, or the resumed checkpoint's.
 */
export function ppoLora(
  laidOut: TrainedModel,
  section: ModelSection,
  key: 'actor' | 'critic',
  placement: Omit<LoraPlacement, 'folder'>,
): PpoLora | undefined {
  const spec = loraSpecOf(section, key);
  if (!spec) return undefined;
  const folder = PPO_ADAPTER_FOLDERS[key];
  const { tp } = placement;
  const lora = openLoraModel(laidOut.model, spec, section, key, { ...placement, folder });
  const config = peftLoraConfig(
    spec,
    section.model_name,
    lora.base.config.head,
    lora.base.config.tieWordEmbeddings,
  );
  return {
    lora,
    trained: loraTrainedModel(laidOut, lora, section, tp),
    baseWorkerModel: () => ({ ...laidOut, model: lora.base, params: {}, dispose: () => {} }),
    merged: () => {
      const full = fullLoraParams(lora, tp, true);
      const params = new Map([...full.params].filter(([n]) => !isLoraParam(n)));
      return { params, dispose: full.dispose };
    },
    writeAdapter: async (dir, isMain) => {
      const full = fullLoraParams(lora, tp);
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
