import { createDecoderModel, type LoraModel, mergeLora, type ParamMap } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import type { RankLayout } from '../parallel-model/rank-layout.js';
import {
  hooksOf,
  type TrainedModel,
  zero3Of,
  zero3TrainedModel,
} from '../parallel-model/trained-model.js';
import { type LoraGather, trainableParams } from './lora-tensors.js';
import { OverlayLookup } from './overlay-lookup.js';

/** A LoRA model laid out under FSDP: the model and its base reading ZeRO-3 shards, and how to gather them. */
export interface FsdpLora {
  /** `model` and `base` gather their units as a pass reads them (`adapters` reads the trained ones by name). */
  readonly lora: LoraModel;
  /** The trained tensors' shards: what AdamW updates. */
  readonly trained: TrainedModel;
  /** The frozen base's shards as a model of its own (a reference worker); it trains nothing. */
  readonly base: TrainedModel;
  readonly gather: LoraGather;
}

/**
 * ZeRO-3 (`<key>.ddp_size` set) of a LoRA model laid out by tp and cp (`local`, its tensors
 * whole on this rank): the trained tensors (adapters, modules_to_save copies, a value head)
 * and the frozen base are sharded over the FSDP groups as full training shards parameters,
 * each in units of its own, one per decoder layer; only the trained units get gradients and
 * optimizer state. The local tensors are freed, but the loaded base's when `keepBase`.
 */
export function shardLoraForFsdp(
  local: LoraModel,
  layout: RankLayout,
  keepBase: boolean,
): FsdpLora {
  const trainedLocal = trainableParams(local);
  // a modules_to_save copy shadows its original by name in `model`; the base keeps the original
  const baseLocal = new Map([...local.base.params].filter(([, v]) => !v.trainable));
  const trainedZero3 = zero3Of(trainedLocal, layout);
  const baseZero3 = zero3Of(baseLocal, layout);
  tf.dispose([...trainedLocal.values(), ...(keepBase ? [] : [...baseLocal.values()])]);
  const { config } = local.base;
  const base = zero3TrainedModel(baseZero3, layout.tp, (lookup, forPass) =>
    createDecoderModel(config, lookup, { ...hooksOf(local.base), ...(forPass ? { forPass } : {}) }),
  );
  const trained = zero3TrainedModel(trainedZero3, layout.tp, (lookup, forPass) =>
    createDecoderModel(
      config,
      new OverlayLookup(lookup, baseZero3.passLookup()) as unknown as ParamMap,
      {
        ...hooksOf(local.model),
        ...(forPass ? { forPass } : {}),
      },
    ),
  );
  const gather: LoraGather = (merged) => {
    const adapters = trainedZero3.gatherAll() as ParamMap;
    const baseParams = merged ? (baseZero3.gatherAll() as ParamMap) : new Map();
    const whole = { ...local, base: { ...local.base, params: baseParams }, adapters };
    const held = [...adapters.values(), ...baseParams.values()];
    return {
      adapters,
      ...(merged ? { merged: () => mergeLora(whole) } : {}),
      free: () => tf.dispose(held),
    };
  };
  return {
    lora: {
      ...local,
      model: trained.model,
      base: base.model,
      adapters: trainedZero3.passLookup() as ParamMap,
    },
    trained: {
      ...trained,
      ready: async () => {
        await base.ready();
        await trained.ready();
      },
      dispose: () => {
        trained.dispose();
        base.dispose();
      },
    },
    base: { ...base, params: {}, dispose: () => {} },
    gather,
  };
}
