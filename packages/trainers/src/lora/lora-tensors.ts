// The tensors a LoRA run trains, and how they are gathered whole for a checkpoint or the engine.
import {
  type DecoderModel,
  isLoraParam,
  type LoraModel,
  mergeLora,
  type ParamMap,
  savedModuleParams,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { fullParams } from '../parallel-model/tensor-parallel-decoder.js';

/** A value model's score head, saved with its adapters and trained in place. */
export const isScoreParam = (model: DecoderModel, name: string) =>
  model.config.head === 'value' && name.startsWith('score.');

/** The parameters a LoRA run trains: the adapters, the modules_to_save copies and a value model's new score head. */
export function trainableParams(lora: LoraModel): ParamMap {
  return new Map([...lora.model.params].filter(([, v]) => v.trainable));
}

/**
 * A LoRA model's tensors as this rank holds them whole (tp shards; under FSDP gathered over
 * it, a collective): the trained ones (adapters, modules_to_save copies, a value head) and,
 * with `merged`, the merged model's (W + s B A of the same shards, see `mergeLora`). `free`
 * releases what was gathered for them.
 */
export type LoraGather = (merged: boolean) => {
  adapters: ParamMap;
  merged?: () => { params: ParamMap; dispose(): void };
  free(): void;
};

/** {@link LoraGather} of a LoRA model whose tensors this rank holds (no FSDP). */
export const localGather =
  (lora: LoraModel): LoraGather =>
  (merged) => ({
    adapters: trainableParams(lora),
    ...(merged ? { merged: () => mergeLora(lora) } : {}),
    free: () => {},
  });

/**
 * The full tensors of a LoRA model (a collective over tp and fsdp: every rank calls it): the
 * trained ones and, with `merged`, the merged model's (merged on each rank's tp shards, which
 * tp splits as W's, then gathered). See {@link LoraGather}.
 */
export function fullLoraParams(
  gather: LoraGather,
  tp: ProcessGroup | undefined,
  merged = false,
): { params: ParamMap; dispose(): void } {
  const local = gather(merged);
  const trained = fullParams(Object.fromEntries(local.adapters), tp);
  const mergedLocal = local.merged?.();
  const full =
    tp && mergedLocal ? fullParams(Object.fromEntries(mergedLocal.params), tp) : mergedLocal;
  if (tp) mergedLocal?.dispose();
  return {
    params: new Map([...(full?.params ?? []), ...trained.params]),
    dispose: () => {
      full?.dispose();
      trained.dispose();
      local.free();
    },
  };
}

/**
 * The PEFT adapter of a LoRA model from its full tensors (see {@link fullLoraParams}): the
 * trained ones (adapters, modules_to_save copies, a value head), by name.
 */
export function adapterTensors(lora: LoraModel, full: ParamMap): ParamMap {
  const toSave = lora.spec.modulesToSave ?? [];
  const copies = new Set(toSave.length > 0 ? savedModuleParams(full.keys(), toSave) : []);
  return new Map(
    [...full].filter(([n]) => isLoraParam(n) || copies.has(n) || isScoreParam(lora.base, n)),
  );
}
