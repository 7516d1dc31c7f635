import { SeededRng } from '@rl2/data';
import { saveModel } from '../checkpoint/save-model.js';
import type { HostTensor } from '../checkpoint/host-tensor.js';
import { parseGenerationConfig } from '../config/generation-config.js';
import {
  type ModelConfig,
  type ModelFamily,
  type ModelHead,
  parseModelConfig,
} from '../config/model-config.js';
import { createDecoderModel, type DecoderModel } from './decoder-model.js';
import { createParamMap } from './param-map.js';
import { paramShapes } from './param-shapes.js';

/** Sizes and options of a new model; unset keys take the defaults shown. */
export interface ModelSpec {
  family: ModelFamily;
  /** Default `causal-lm`. */
  head?: ModelHead;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Default numHeads. */
  numKvHeads?: number;
  /** Default hiddenSize / numHeads. */
  headDim?: number;
  /** Default true for qwen2/qwen3, false for llama. */
  tieWordEmbeddings?: boolean;
  /** Default 10000 (llama) / 1e6 (qwen). */
  ropeTheta?: number;
  /** Default 1e-6. */
  rmsNormEps?: number;
  /** Default 4096. */
  maxPositionEmbeddings?: number;
  bosTokenId?: number;
  eosTokenId?: number;
  /** Std of the normal init of linear and embedding weights (HF `initializer_range`, default 0.02). */
  initializerRange?: number;
}

const ARCH: Record<ModelFamily, string> = { llama: 'Llama', qwen2: 'Qwen2', qwen3: 'Qwen3' };

/** The Hugging Face `config.json` object of a spec. */
export function createModelConfigJson(spec: ModelSpec): Record<string, unknown> {
  const head = spec.head ?? 'causal-lm';
  const qwen = spec.family !== 'llama';
  return {
    architectures: [
      `${ARCH[spec.family]}${head === 'value' ? 'ForTokenClassification' : 'ForCausalLM'}`,
    ],
    model_type: spec.family,
    vocab_size: spec.vocabSize,
    hidden_size: spec.hiddenSize,
    intermediate_size: spec.intermediateSize,
    num_hidden_layers: spec.numLayers,
    num_attention_heads: spec.numHeads,
    num_key_value_heads: spec.numKvHeads ?? spec.numHeads,
    ...(spec.headDim !== undefined || spec.family === 'qwen3'
      ? { head_dim: spec.headDim ?? spec.hiddenSize / spec.numHeads }
      : {}),
    hidden_act: 'silu',
    max_position_embeddings: spec.maxPositionEmbeddings ?? 4096,
    rms_norm_eps: spec.rmsNormEps ?? 1e-6,
    rope_theta: spec.ropeTheta ?? (qwen ? 1e6 : 10000),
    rope_scaling: null,
    tie_word_embeddings: spec.tieWordEmbeddings ?? qwen,
    attention_bias: false,
    ...(qwen ? { use_sliding_window: false } : { mlp_bias: false }),
    initializer_range: spec.initializerRange ?? 0.02,
    bos_token_id: spec.bosTokenId ?? 1,
    eos_token_id: spec.eosTokenId ?? 2,
    torch_dtype: 'float32',
    ...(head === 'value'
      ? { num_labels: 1, id2label: { 0: 'LABEL_0' }, label2id: { LABEL_0: 0 } }
      : {}),
  };
}

/**
 * A randomly initialised model, as HF `_init_weights`: linear and embedding weights
 * ~ N(0, initializer_range), biases 0, norm weights 1. Deterministic in `seed`.
 */
export function initRandomModel(config: ModelConfig | ModelSpec, seed = 0): DecoderModel {
  const c =
    'raw' in config ? config : parseModelConfig(createModelConfigJson(config), 'model spec');
  const std = typeof c.raw.initializer_range === 'number' ? c.raw.initializer_range : 0.02;
  const rng = new SeededRng(seed);
  const weights = new Map<string, HostTensor>();
  for (const [name, shape] of paramShapes(c)) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (name.endsWith('norm.weight')) data.fill(1);
    else if (name.endsWith('.weight'))
      for (let i = 0; i < data.length; i++) data[i] = std * rng.normal();
    weights.set(name, { shape, data });
  }
  return createDecoderModel(c, createParamMap(c, weights, 'initRandomModel'));
}

/**
 * Writes a new random checkpoint (config.json, generation_config.json, model.safetensors) to
 * `dir`, for `rl2 init-model`. Returns the model and the files written.
 */
export async function initModelCheckpoint(
  dir: string,
  spec: ModelSpec,
  options: { seed?: number; dtype?: 'float32' | 'bfloat16'; maxShardSize?: number | string } = {},
): Promise<{ model: DecoderModel; files: string[] }> {
  const model = initRandomModel(spec, options.seed ?? 0);
  const generationConfig = parseGenerationConfig({
    bos_token_id: spec.bosTokenId ?? 1,
    eos_token_id: spec.eosTokenId ?? 2,
  });
  const files = await saveModel(dir, model, {
    dtype: options.dtype,
    maxShardSize: options.maxShardSize,
    generationConfig,
  });
  return { model, files };
}
