import { dirname, join } from 'node:path';
import {
  type DecoderModel,
  type FrozenWeights,
  type LoraModel,
  type LoraSpec,
  type ParamMap,
  attachTensorParallelLora,
  initLoraParams,
  isLoraParam,
  loraParamsFromHost,
  peftLoraConfig,
  readPeftAdapter,
  writePeftAdapter,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { hasFrozenLinear } from '@rl2/engine';
import { modelIdentity } from '../checkpoint/model-identity.js';
import type { ModelSection } from '../config/sections.js';
import { TrainersError } from '../errors.js';
import type { TrainedModel } from '../parallel-model/trained-model.js';
import {
  adapterTensors,
  fullLoraParams,
  isScoreParam,
  localGather,
  trainableParams,
} from './lora-tensors.js';

/** The folder of a checkpoint that holds the PEFT adapter (beside `model/`, `optimizer.safetensors`). */
export const ADAPTER_FOLDER = 'adapter';

/** The LoRA spec `<key>.lora.*` asks for, or undefined when `<key>.lora.rank` is 0 (full training). */
export function loraSpecOf(section: ModelSection): LoraSpec | undefined {
  const l = section.lora;
  if (l.rank === 0) return undefined;
  return {
    rank: l.rank,
    alpha: l.alpha,
    dropout: l.dropout,
    targetModules: l.target_modules,
    useRslora: l.use_rslora,
    modulesToSave: l.modules_to_save,
  };
}

/**
 * Whether the run loads `<key>.model_name` with its BF16 matrices kept in 16 bits (`loadModel`'s
 * `frozenBase`), from `<key>.lora.base_dtype`: auto when the native engine has the frozen
 * kernels and no merged checkpoint is written; bfloat16 insists (an error names what to change).
 * Under tensor parallelism each rank keeps its shard of every 16-bit matrix (`parallelDecoder`).
 */
export function frozenBaseOf(section: ModelSection, key: string, spec?: LoraSpec): boolean {
  const want = section.lora.base_dtype;
  if (!spec || want === 'float32') return false;
  const toSave = section.lora.modules_to_save;
  const blocker =
    toSave.length > 0
      ? `${key}.lora.modules_to_save=[${toSave}] trains float32 copies of those modules; set ${key}.lora.modules_to_save=[]`
      : !hasFrozenLinear()
        ? `the active engine backend (${tf.getBackend()}) has no frozen 16-bit kernels; use trainer.backend=native with the C addon built`
        : section.lora.save_merged
          ? `${key}.lora.save_merged=true merges into float32 weights; merge afterwards with rl2 export --merge`
          : undefined;
  if (blocker && want === 'bfloat16')
    throw new TrainersError(
      'CONFIG_INVALID_VALUE',
      `${key}.lora.base_dtype=bfloat16: ${blocker}, or set ${key}.lora.base_dtype=float32`,
    );
  return !blocker;
}

/** With `<key>.lora.base_dtype=bfloat16`: fails when the loaded base kept nothing in 16 bits (a float32 checkpoint). */
export function checkFrozenBase(model: DecoderModel, section: ModelSection, key: string): void {
  if (section.lora.base_dtype !== 'bfloat16' || (model.frozen?.size ?? 0) > 0) return;
  throw new TrainersError(
    'CONFIG_INVALID_VALUE',
    `${key}.lora.base_dtype=bfloat16 keeps a base stored in bfloat16 as it is, but ${key}.model_name=` +
      `${section.model_name} stores no BF16 matrices; set ${key}.lora.base_dtype=auto or float32 ` +
      '(or convert it with rl2 export --dtype bfloat16)',
  );
}

/** The run's line about a base kept in 16 bits: how many matrices and how much memory. */
export function describeFrozenBase(frozen: FrozenWeights, key: string): string {
  return `LoRA base kept in bfloat16 (${key}): ${frozen.size} matrices, ${(frozenBytes(frozen) / 2 ** 30).toFixed(2)} GiB`;
}

/** A tp rank's line about its shard of a base kept in 16 bits (the bytes exact: 1/tp of the whole). */
export function describeFrozenShard(frozen: FrozenWeights, tp: ProcessGroup): string {
  return `LoRA base tp rank ${tp.rank} of ${tp.size}: ${frozen.size} bfloat16 shards, ${frozenBytes(frozen)} bytes`;
}

const frozenBytes = (frozen: FrozenWeights) =>
  [...frozen.values()].reduce((a, m) => a + m.bits.byteLength, 0);

/** Where a LoRA run's adapters come from and how this rank holds them. */
export interface LoraPlacement {
  /** New adapters are initialised from it (PEFT's init). */
  readonly seed: number;
  /** The checkpoint to resume from: its adapter folder is read. */
  readonly resumeFrom?: string;
  /** The checkpoint's adapter folder (default `adapter`). */
  readonly folder?: string;
  /** The model's tensor-parallel group: adapters are split as their base layers. */
  readonly tp?: ProcessGroup;
}

/**
 * Puts adapters on `model` (laid out as this rank runs it): new ones (PEFT's init, seeded by
 * `seed`), or the resumed checkpoint's `adapter/` (with a value head's trained `score.*`),
 * which must have been trained with the same `<key>.lora.*` shape from the same base. Under
 * tp every rank makes or reads the full adapter and keeps its shard of it.
 */
export function openLoraModel(
  model: DecoderModel,
  spec: LoraSpec,
  section: ModelSection,
  key: string,
  { seed, resumeFrom, folder = ADAPTER_FOLDER, tp }: LoraPlacement,
): LoraModel {
  if (!resumeFrom)
    return attachTensorParallelLora(
      model,
      initLoraParams(model.config, spec, seed),
      spec,
      new Map(),
      tp,
    );
  const dir = join(resumeFrom, folder);
  let saved: ReturnType<typeof readPeftAdapter>;
  try {
    saved = readPeftAdapter(dir);
  } catch (err) {
    throw new TrainersError(
      'CHECKPOINT',
      `trainer.load_ckpt_from with ${key}.lora.rank=${spec.rank}: ${(err as Error).message}`,
    );
  }
  checkResumedAdapter(saved.spec, saved.config.base_model_name_or_path, spec, section, key, dir);
  const adapters = loraParamsFromHost(new Map([...saved.tensors].filter(([n]) => isLoraParam(n))));
  const modules = loraParamsFromHost(
    new Map([...saved.tensors].filter(([n]) => !isLoraParam(n) && !isScoreParam(model, n))),
  );
  for (const [name, t] of saved.tensors) {
    if (!isScoreParam(model, name)) continue;
    const p = model.params.get(name);
    if (!p)
      throw new TrainersError(
        'CHECKPOINT',
        `${dir}: "${name}" is no parameter of ${key}.model_name`,
      );
    tf.tidy(() => p.assign(tf.tensor(t.data, t.shape)));
  }
  try {
    return attachTensorParallelLora(model, adapters, spec, modules, tp);
  } catch (err) {
    throw new TrainersError('CHECKPOINT', `${dir}: ${(err as Error).message}`);
  } finally {
    tf.dispose([...modules.values()]);
  }
}

function checkResumedAdapter(
  saved: LoraSpec,
  base: string,
  spec: LoraSpec,
  section: ModelSection,
  key: string,
  dir: string,
): void {
  const changes = [
    saved.rank !== spec.rank ? `rank ${saved.rank} saved, ${spec.rank} set` : '',
    saved.alpha !== spec.alpha ? `alpha ${saved.alpha} saved, ${spec.alpha} set` : '',
    saved.useRslora !== spec.useRslora
      ? `use_rslora ${saved.useRslora} saved, ${spec.useRslora} set`
      : '',
    saved.targetModules.join(',') !== spec.targetModules.join(',')
      ? `target_modules [${saved.targetModules}] saved, [${spec.targetModules}] set`
      : '',
    `${saved.modulesToSave ?? []}` !== `${spec.modulesToSave ?? []}`
      ? `modules_to_save [${saved.modulesToSave ?? []}] saved, [${spec.modulesToSave ?? []}] set`
      : '',
    base && modelIdentity(base) !== modelIdentity(section.model_name)
      ? `trained on ${key}.model_name=${base}, ${section.model_name} set`
      : '',
  ].filter(Boolean);
  if (changes.length > 0)
    throw new TrainersError(
      'CHECKPOINT',
      `trainer.load_ckpt_from: the adapter ${dir} does not fit ${key}.lora.* (${changes.join('; ')}); ` +
        `resume with the settings it was trained with, or start a new run in another trainer.save_dir`,
    );
}

/**
 * `trained` (laid out with data, tensor and context parallelism) training `lora`'s adapters:
 * AdamW and the gradients see only them; the base stays frozen and gets no optimizer state.
 * `fullParams` gathers the adapters' tp shards, and with `merged` the merged model's (see
 * {@link fullLoraParams}).
 */
export function loraTrainedModel(
  trained: TrainedModel,
  lora: LoraModel,
  tp: ProcessGroup | undefined,
  merged: boolean,
): TrainedModel {
  const params = Object.fromEntries(trainableParams(lora));
  return {
    ...trained,
    model: lora.model,
    params,
    fullParams: () => fullLoraParams(localGather(lora), tp, merged),
    dispose: () => {
      tf.dispose([...lora.adapters.values()]);
      trained.dispose();
    },
  };
}

/**
 * The checkpoint writer of a LoRA run: `adapter/` (PEFT files: what PEFT, vLLM and SGLang load)
 * beside the checkpoint's `model/`, which is written (the merged W + s B A, a plain HF model,
 * through `saveMerged`) only with `<key>.lora.save_merged`. Called with the checkpoint's
 * `model/` path and the run's full tensors (`fullLoraParams`, merged ones included when saved).
 */
export function loraSaver(
  lora: LoraModel,
  section: ModelSection,
  saveMerged: (dir: string, params: ParamMap) => Promise<void>,
  folder = ADAPTER_FOLDER,
) {
  const config = peftLoraConfig(
    lora.spec,
    section.model_name,
    lora.base.config.head,
    lora.base.config.tieWordEmbeddings,
  );
  return async (modelDir: string, full: ParamMap) => {
    await writePeftAdapter(join(dirname(modelDir), folder), adapterTensors(lora, full), config);
    if (!section.lora.save_merged) return;
    await saveMerged(modelDir, new Map([...full].filter(([n]) => !isLoraParam(n))));
  };
}
