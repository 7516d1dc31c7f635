import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as tf from '@tensorflow/tfjs-core';
import { writeFileAtomic } from '../atomic/atomic-write.js';
import type { HostTensor } from '../checkpoint/host-tensor.js';
import { parseSafetensors } from '../checkpoint/safetensors-reader.js';
import { serializeSafetensors } from '../checkpoint/safetensors-writer.js';
import type { ModelHead } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import { LORA_TARGET_MODULES, type LoraSpec, type LoraTargetModule } from './lora-spec.js';

/** PEFT's prefix of every saved key: `PeftModel.base_model` (LoraModel) `.model` (the HF model). */
const PEFT_PREFIX = 'base_model.model.';
export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

/** The fields of PEFT's `adapter_config.json` for a LoRA adapter that this code writes and reads. */
export interface PeftLoraConfig {
  peft_type: 'LORA';
  task_type: 'CAUSAL_LM' | 'TOKEN_CLS';
  base_model_name_or_path: string;
  r: number;
  lora_alpha: number;
  lora_dropout: number;
  target_modules: string[];
  use_rslora: boolean;
  modules_to_save: string[] | null;
  /** PEFT >= 0.18: a saved `embed_tokens` / `lm_head` of a tied model stays tied (one trained copy). */
  ensure_weight_tying?: boolean;
  bias: 'none';
  fan_in_fan_out: false;
  inference_mode: boolean;
  init_lora_weights: true;
}

/**
 * `adapter_config.json` of `spec` on the model `baseModel` (a hub id or folder) with head `head`;
 * `tied`: the model ties its LM head to the embedding (`tie_word_embeddings`).
 */
export function peftLoraConfig(
  spec: LoraSpec,
  baseModel: string,
  head: ModelHead,
  tied = false,
): PeftLoraConfig {
  // a value model's score head is new: PEFT saves it whole with the adapters
  const toSave = [...(spec.modulesToSave ?? []), ...(head === 'value' ? ['score'] : [])];
  const tiedSaved = tied && toSave.some((m) => /(^|\.)(embed_tokens|lm_head)$/.test(m));
  return {
    peft_type: 'LORA',
    task_type: head === 'value' ? 'TOKEN_CLS' : 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: spec.rank,
    lora_alpha: spec.alpha,
    lora_dropout: spec.dropout,
    target_modules: [...spec.targetModules],
    use_rslora: spec.useRslora,
    modules_to_save: toSave.length > 0 ? toSave : null,
    // rl2 trains one copy of a tied embedding, read by the lookup and the LM head, as PEFT does with this
    ...(tiedSaved ? { ensure_weight_tying: true } : {}),
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
  };
}

/**
 * Writes a PEFT LoRA adapter folder: `adapter_config.json` and `adapter_model.safetensors`
 * (float32) with `tensors` under PEFT's keys, e.g. `model.layers.0.self_attn.q_proj.lora_A.weight`
 * as `base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight` [r, in], and a saved
 * module's tensors whole under theirs (`score.weight` as `base_model.model.score.weight`,
 * `model.norm.weight` as `base_model.model.model.norm.weight`: PEFT's `get_peft_model_state_dict`
 * drops the `modules_to_save.default.` of its copy): what `PeftModel.from_pretrained`, vLLM and SGLang load.
 */
export async function writePeftAdapter(
  dir: string,
  tensors: ReadonlyMap<string, tf.Tensor>,
  config: PeftLoraConfig,
): Promise<void> {
  const host = new Map<string, HostTensor>();
  for (const [name, t] of tensors)
    host.set(PEFT_PREFIX + name, { shape: [...t.shape], data: (await t.data()) as Float32Array });
  writeFileAtomic(join(dir, ADAPTER_WEIGHTS_FILE), serializeSafetensors(host));
  writeFileAtomic(join(dir, ADAPTER_CONFIG_FILE), `${JSON.stringify(config, null, 2)}\n`);
}

/** A PEFT LoRA adapter read back: its spec, the model it was trained on, tensors by model name. */
export interface PeftAdapter {
  readonly spec: LoraSpec;
  readonly config: PeftLoraConfig;
  readonly tensors: Map<string, HostTensor>;
}

function fail(file: string, what: string): never {
  throw new ModelsError('CHECKPOINT_ERROR', `${file}: ${what}`);
}

/** Reads a PEFT LoRA adapter folder (as {@link writePeftAdapter} writes it, or PEFT's `save_pretrained`). */
export function readPeftAdapter(dir: string): PeftAdapter {
  const file = join(dir, ADAPTER_CONFIG_FILE);
  let config: PeftLoraConfig;
  try {
    config = JSON.parse(readFileSync(file, 'utf8')) as PeftLoraConfig;
  } catch (err) {
    fail(file, `cannot read a PEFT adapter config (${(err as Error).message})`);
  }
  if (config.peft_type !== 'LORA')
    fail(file, `peft_type is ${config.peft_type}, only LORA adapters load`);
  const targets = config.target_modules;
  if (
    !Array.isArray(targets) ||
    targets.some((t) => !(LORA_TARGET_MODULES as readonly string[]).includes(t))
  )
    fail(
      file,
      `target_modules ${JSON.stringify(targets)}: a list of ${LORA_TARGET_MODULES.join(', ')} loads`,
    );
  let spec: LoraSpec = {
    rank: config.r,
    alpha: config.lora_alpha,
    dropout: config.lora_dropout ?? 0,
    targetModules: targets as LoraTargetModule[],
    useRslora: config.use_rslora ?? false,
  };
  // a value head's `score` is saved by head, not by name (see peftLoraConfig)
  const toSave = (config.modules_to_save ?? []).filter((m) => m !== 'score');
  if (toSave.length > 0) spec = { ...spec, modulesToSave: toSave };
  const weights = join(dir, ADAPTER_WEIGHTS_FILE);
  let raw: Map<string, HostTensor>;
  try {
    raw = parseSafetensors(new Uint8Array(readFileSync(weights)), weights);
  } catch (err) {
    fail(weights, (err as Error).message);
  }
  const tensors = new Map<string, HostTensor>();
  for (const [key, t] of raw) {
    if (!key.startsWith(PEFT_PREFIX))
      fail(weights, `key "${key}" does not start with ${PEFT_PREFIX}`);
    tensors.set(key.slice(PEFT_PREFIX.length), t);
  }
  return { spec, config, tensors };
}
