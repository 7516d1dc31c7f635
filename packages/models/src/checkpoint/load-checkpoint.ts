import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { HubModelOptions } from '@rl2/data';
import { type GenerationConfig, parseGenerationConfig } from '../config/generation-config.js';
import { type ModelConfig, type ModelHead, parseModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import {
  createDecoderModel,
  type DecoderModel,
  type DecoderModelOptions,
} from '../model/decoder-model.js';
import { createParamMap } from '../model/param-map.js';
import { CheckpointReader, readCheckpointWeights, readJsonFile } from './checkpoint-reader.js';
import type { HostTensor } from './host-tensor.js';
import type { FrozenMatrix } from '@rl2/engine';
import { isFrozenMatrixName } from '../frozen/frozen-weights.js';
import { resolveModelDir } from './resolve-model-dir.js';

/** Reads and validates `config.json` of a checkpoint folder. */
export async function readModelConfig(dir: string): Promise<ModelConfig> {
  const path = join(dir, 'config.json');
  if (!existsSync(path))
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `${path}: not found; is "${dir}" a Hugging Face model folder?`,
    );
  return parseModelConfig(readJsonFile(path), path);
}

/** Reads `generation_config.json` when present. */
export async function readGenerationConfig(dir: string): Promise<GenerationConfig | undefined> {
  const path = join(dir, 'generation_config.json');
  if (!existsSync(path)) return undefined;
  return parseGenerationConfig(readJsonFile(path), path);
}

/** Options of `loadModel`. */
export interface LoadModelOptions extends DecoderModelOptions {
  /**
   * Load as this head regardless of `architectures`: `value` turns a causal-LM checkpoint into
   * a `*ForTokenClassification` critic (its `score` starts at zero, `lm_head` is dropped).
   */
  head?: ModelHead;
  /** How to reach the hub when `dir` is a hub id (default: from HF_* variables), and download progress. */
  hub?: HubModelOptions;
  /**
   * A frozen base (LoRA): the projections, the embedding and an untied LM head stored as BF16
   * stay 16-bit bits (`DecoderModel.frozen`, half the memory, no variables) instead of float32
   * parameters. Needs the native backend's `frozenLinear`. Tensors stored as F32 load as usual.
   */
  frozenBase?: boolean;
}

/** A loaded model plus its generation defaults. */
export interface LoadedModel {
  model: DecoderModel;
  generationConfig?: GenerationConfig;
}

/**
 * Loads config.json, generation_config.json and the safetensors weights of `nameOrDir`: a
 * model folder, or a hub id such as `Qwen/Qwen3-0.6B` (downloaded into the HF cache, see
 * `resolveModelDir`).
 */
export async function loadModel(
  nameOrDir: string,
  options: LoadModelOptions = {},
): Promise<LoadedModel> {
  const dir = await resolveModelDir(nameOrDir, options.hub);
  let config = await readModelConfig(dir);
  if (options.head && options.head !== config.head) config = withHead(config, options.head);
  const { weights, frozen } = options.frozenBase
    ? readFrozenBase(dir, config)
    : { weights: await readCheckpointWeights(dir), frozen: undefined };
  const params = createParamMap(config, weights, dir, frozen);
  return {
    model: createDecoderModel(config, params, { ...options, ...(frozen?.size ? { frozen } : {}) }),
    generationConfig: await readGenerationConfig(dir),
  };
}

/**
 * The tensors of checkpoint `dir`, one at a time: BF16 matrices a frozen base keeps in 16 bits
 * (see `isFrozenMatrixName`) as their bits, the rest widened to float32 (a tied model's extra
 * `lm_head.weight` is not read).
 */
function readFrozenBase(
  dir: string,
  config: ModelConfig,
): { weights: Map<string, HostTensor>; frozen: Map<string, FrozenMatrix> } {
  const reader = CheckpointReader.open(dir);
  const weights = new Map<string, HostTensor>();
  const frozen = new Map<string, FrozenMatrix>();
  try {
    for (const name of reader.names()) {
      const e = reader.entry(name)!;
      if (name === 'lm_head.weight' && config.tieWordEmbeddings) continue;
      if (e.dtype === 'BF16' && e.shape.length === 2 && isFrozenMatrixName(config, name))
        frozen.set(name, {
          bits: reader.readBits(name),
          dtype: 'bfloat16',
          shape: [e.shape[0]!, e.shape[1]!],
        });
      else weights.set(name, reader.read(name));
    }
  } finally {
    reader.close();
  }
  return { weights, frozen };
}

/** The same decoder with another head (`architectures` renamed accordingly). */
export function withHead(config: ModelConfig, head: ModelHead): ModelConfig {
  const stem = config.architecture.replace(/For(CausalLM|TokenClassification)$/, '');
  const architecture = `${stem}${head === 'value' ? 'ForTokenClassification' : 'ForCausalLM'}`;
  const raw: Record<string, unknown> = { ...config.raw, architectures: [architecture] };
  if (head === 'value')
    Object.assign(raw, { num_labels: 1, id2label: { 0: 'LABEL_0' }, label2id: { LABEL_0: 0 } });
  return {
    ...config,
    head,
    architecture,
    tieWordEmbeddings: head === 'causal-lm' && config.raw.tie_word_embeddings === true,
    raw,
  };
}
