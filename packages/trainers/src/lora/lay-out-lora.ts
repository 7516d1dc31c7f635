import type { DecoderModel, LoraModel, LoraSpec } from '@rl2/models';
import type { ModelSection } from '../config/sections.js';
import type { RankLayout } from '../parallel-model/rank-layout.js';
import { type TrainedModel, trainModel } from '../parallel-model/trained-model.js';
import { shardLoraForFsdp } from './lora-fsdp.js';
import { type LoraPlacement, loraTrainedModel, openLoraModel } from './lora-run.js';
import { fullLoraParams, type LoraGather, localGather } from './lora-tensors.js';

/** A LoRA model as this rank trains it, its frozen base as a model of its own, and how to gather them. */
export interface LaidOutLora {
  readonly lora: LoraModel;
  /** What the worker or loop trains: the adapters (and copies, a value head); `fullParams` as `fullLoraParams`. */
  readonly trained: TrainedModel;
  /** The base without the adapters (a DPO or PPO reference): it trains nothing and frees nothing. */
  readonly base: TrainedModel;
  readonly gather: LoraGather;
}

/**
 * LoRA on `loaded` laid out by `layout`: tensor and context parallelism first (`trainModel`),
 * the adapters put on this rank's shards (`openLoraModel`, split for tp as their layers), then
 * with FSDP groups (`<key>.ddp_size`) the trained tensors and the base sharded ZeRO-3 style
 * (`shardLoraForFsdp`). `keepFull` keeps the loaded tensors (PPO generates with them).
 */
export function layOutLora(
  loaded: DecoderModel,
  layout: RankLayout,
  spec: LoraSpec,
  section: ModelSection,
  key: string,
  placement: Omit<LoraPlacement, 'tp'>,
  options: { keepFull?: boolean } = {},
): LaidOutLora {
  const { fsdp, ...unsharded } = layout;
  const laidOut = trainModel(loaded, unsharded, key, options);
  const local = openLoraModel(laidOut.model, spec, section, key, {
    ...placement,
    ...(layout.tp ? { tp: layout.tp } : {}),
  });
  if (!fsdp) {
    // the merged model is made where a checkpoint is written, or gathered (every tp rank)
    const merged = section.lora.save_merged && (layout.tp !== undefined || layout.world.rank === 0);
    return {
      lora: local,
      trained: loraTrainedModel(laidOut, local, layout.tp, merged),
      base: { ...laidOut, model: local.base, params: {}, dispose: () => {} },
      gather: localGather(local),
    };
  }
  const sharded = shardLoraForFsdp(local, layout, options.keepFull === true && !layout.tp);
  return {
    ...sharded,
    trained: {
      ...sharded.trained,
      fullParams: () => fullLoraParams(sharded.gather, layout.tp, section.lora.save_merged),
    },
  };
}
