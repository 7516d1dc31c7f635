import { ModelsError } from '../errors.js';

/** Decoder families this package implements, keyed by Hugging Face `model_type`. */
export type ModelFamily = 'llama' | 'qwen2' | 'qwen3';

/** Which head sits on the decoder: `causal-lm` (lm_head / tied embeddings) or `value` (score, 1 label). */
export type ModelHead = 'causal-lm' | 'value';

/** RoPE frequency scaling: none, linear (positions / factor) or Llama 3 (wavelength-banded). */
export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

/** Validated, typed view of a Hugging Face `config.json` for a Llama/Qwen decoder. */
export interface ModelConfig {
  family: ModelFamily;
  head: ModelHead;
  /** `architectures[0]`, e.g. `Qwen2ForCausalLM`. */
  architecture: string;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v projections (always for Qwen2, `attention_bias` for Llama). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama `attention_bias` puts it on all four projections). */
  outputBias: boolean;
  mlpBias: boolean;
  /** Per-head RMSNorm on q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  bosTokenId?: number;
  eosTokenIds: number[];
  /** The original JSON, kept so that saving writes back every key we do not model. */
  raw: Record<string, unknown>;
}

const FAMILY_OF_ARCH: Record<string, [ModelFamily, ModelHead]> = {
  LlamaForCausalLM: ['llama', 'causal-lm'],
  LlamaForTokenClassification: ['llama', 'value'],
  Qwen2ForCausalLM: ['qwen2', 'causal-lm'],
  Qwen2ForTokenClassification: ['qwen2', 'value'],
  Qwen3ForCausalLM: ['qwen3', 'causal-lm'],
  Qwen3ForTokenClassification: ['qwen3', 'value'],
};

/** Architectures `parseModelConfig` accepts. */
export const SUPPORTED_ARCHITECTURES = Object.keys(FAMILY_OF_ARCH);

/**
 * Parses and validates a Hugging Face `config.json` object. `source` (a path) is only used in
 * error messages. Unknown architectures and options this implementation would silently get
 * wrong (sliding window, yarn RoPE, non-SiLU activations, ...) throw `UNSUPPORTED_CONFIG`.
 */
export function parseModelConfig(json: unknown, source = 'config.json'): ModelConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelsError('INVALID_ARGUMENT', `${source}: expected a JSON object`);
  }
  const raw = json as Record<string, unknown>;
  const unsupported = (what: string, hint?: string) =>
    new ModelsError(
      'UNSUPPORTED_CONFIG',
      `${source}: ${what} is not supported by @rl2/models${hint ? ` (${hint})` : ''}`,
    );
  const archs = Array.isArray(raw.architectures) ? (raw.architectures as unknown[]) : [];
  const arch = typeof archs[0] === 'string' ? (archs[0] as string) : undefined;
  const modelType = typeof raw.model_type === 'string' ? raw.model_type : undefined;
  let family: ModelFamily;
  let head: ModelHead;
  if (arch !== undefined) {
    const hit = FAMILY_OF_ARCH[arch];
    if (!hit) {
      throw unsupported(
        `architectures "${arch}"`,
        `supported: ${SUPPORTED_ARCHITECTURES.join(', ')}`,
      );
    }
    [family, head] = hit;
    if (modelType !== undefined && modelType !== family) {
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${source}: model_type "${modelType}" does not match architectures "${arch}" (expected "${family}")`,
      );
    }
  } else if (modelType === 'llama' || modelType === 'qwen2' || modelType === 'qwen3') {
    family = modelType;
    head = 'causal-lm';
  } else {
    throw unsupported(
      `model_type "${String(modelType)}"`,
      `supported architectures: ${SUPPORTED_ARCHITECTURES.join(', ')}`,
    );
  }
  const int = (key: string, fallback?: number): number => {
    const v = raw[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${source}: "${key}" must be a positive integer, got ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const num = (key: string, fallback: number): number => {
    const v = raw[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `${source}: "${key}" must be a positive number, got ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const hiddenSize = int('hidden_size');
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `${source}: num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`,
    );
  }
  const headDim = raw.head_dim == null ? hiddenSize / numHeads : int('head_dim');
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `${source}: head_dim ${headDim} must be an even integer (set "head_dim")`,
    );
  }
  const act = raw.hidden_act ?? 'silu';
  if (act !== 'silu') throw unsupported(`hidden_act "${String(act)}"`, 'only "silu"');
  if (raw.use_sliding_window === true)
    throw unsupported('use_sliding_window: true', 'set it to false');
  if (raw.pretraining_tp != null && raw.pretraining_tp !== 1)
    throw unsupported(`pretraining_tp ${String(raw.pretraining_tp)}`, 'set it to 1');
  if (head === 'value' && raw.num_labels != null && raw.num_labels !== 1) {
    throw unsupported(
      `num_labels ${String(raw.num_labels)} for ${arch}`,
      'a value head has exactly 1 label',
    );
  }
  const attentionBias = raw.attention_bias === true;
  const eos = raw.eos_token_id;
  return {
    family,
    head,
    architecture:
      arch ?? `${family === 'llama' ? 'Llama' : family === 'qwen2' ? 'Qwen2' : 'Qwen3'}ForCausalLM`,
    vocabSize: int('vocab_size'),
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    numLayers: int('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: num('rope_theta', 10000),
    ropeScaling: parseRopeScaling(raw.rope_scaling, source),
    maxPositionEmbeddings: int('max_position_embeddings', 2048),
    tieWordEmbeddings: head === 'causal-lm' && raw.tie_word_embeddings === true,
    qkvBias: family === 'qwen2' || attentionBias,
    outputBias: family !== 'qwen2' && attentionBias,
    mlpBias: raw.mlp_bias === true,
    qkNorm: family === 'qwen3',
    bosTokenId: typeof raw.bos_token_id === 'number' ? raw.bos_token_id : undefined,
    eosTokenIds:
      typeof eos === 'number'
        ? [eos]
        : Array.isArray(eos)
          ? eos.filter((x): x is number => typeof x === 'number')
          : [],
    raw: { ...raw },
  };
}

function parseRopeScaling(v: unknown, source: string): RopeScaling {
  if (v == null) return { type: 'default' };
  if (typeof v !== 'object') {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `${source}: "rope_scaling" must be an object or null`,
    );
  }
  const r = v as Record<string, unknown>;
  const kind = r.rope_type ?? r.type;
  const n = (key: string): number => {
    if (typeof r[key] !== 'number') {
      throw new ModelsError('INVALID_ARGUMENT', `${source}: rope_scaling.${key} must be a number`);
    }
    return r[key] as number;
  };
  if (kind === 'default') return { type: 'default' };
  if (kind === 'linear') return { type: 'linear', factor: n('factor') };
  if (kind === 'llama3') {
    return {
      type: 'llama3',
      factor: n('factor'),
      lowFreqFactor: n('low_freq_factor'),
      highFreqFactor: n('high_freq_factor'),
      originalMaxPositionEmbeddings: n('original_max_position_embeddings'),
    };
  }
  throw new ModelsError(
    'UNSUPPORTED_CONFIG',
    `${source}: rope_scaling type "${String(kind)}" is not supported by @rl2/models (supported: default, linear, llama3)`,
  );
}
