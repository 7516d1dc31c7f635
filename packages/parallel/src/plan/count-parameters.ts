import { ParallelError } from '../errors.js';

/** The fields of a Hugging Face config.json that fix a Llama/Qwen decoder's size. */
export interface DecoderConfig {
  model_type?: string;
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads?: number;
  head_dim?: number;
  tie_word_embeddings?: boolean;
  attention_bias?: boolean;
}

/** Parameter counts split by how tensor parallelism treats them. */
export interface ParameterCount {
  total: number;
  /** Per decoder layer: split over tp (q/k/v/o, gate/up/down and q/k/v biases). */
  layerSharded: number;
  /** Per decoder layer: replicated over tp (RMSNorm weights, Qwen3 q/k norms). */
  layerReplicated: number;
  /** Embedding plus untied LM head: vocab-parallel. */
  vocab: number;
  /** Final norm: replicated. */
  finalNorm: number;
  headDim: number;
  kvHeads: number;
}

function need(config: Record<string, unknown>, key: keyof DecoderConfig): number {
  const v = config[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `config.json: "${key}" must be a positive integer (got ${JSON.stringify(v)}); pass a Llama/Qwen config.`,
    );
  }
  return v;
}

/**
 * Count a Llama / Qwen2 / Qwen3 decoder's parameters from its config.json:
 * per layer q [H, nH*hd], k and v [H, nKV*hd], o [nH*hd, H], gate/up/down 3*H*I, two RMSNorms;
 * q/k/v biases when `attention_bias` (default true for qwen2); q/k RMSNorms for qwen3;
 * embedding V*H, an LM head V*H unless tied, a final norm H.
 */
export function countParameters(config: DecoderConfig): ParameterCount {
  const c = config as unknown as Record<string, unknown>;
  const H = need(c, 'hidden_size');
  const I = need(c, 'intermediate_size');
  const V = need(c, 'vocab_size');
  need(c, 'num_hidden_layers');
  const nH = need(c, 'num_attention_heads');
  const nKV = config.num_key_value_heads ?? nH;
  const hd = config.head_dim ?? H / nH;
  if (!Number.isInteger(hd))
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `config.json: hidden_size ${H} is not divisible by num_attention_heads ${nH}; set head_dim.`,
    );
  const bias = config.attention_bias ?? config.model_type === 'qwen2';
  const q = H * nH * hd + (bias ? nH * hd : 0);
  const kv = 2 * (H * nKV * hd + (bias ? nKV * hd : 0));
  const o = nH * hd * H;
  const mlp = 3 * H * I;
  const layerSharded = q + kv + o + mlp;
  const layerReplicated = 2 * H + (config.model_type === 'qwen3' ? 2 * hd : 0);
  const vocab = V * H * (config.tie_word_embeddings ? 1 : 2);
  const total = config.num_hidden_layers * (layerSharded + layerReplicated) + vocab + H;
  return { total, layerSharded, layerReplicated, vocab, finalNorm: H, headDim: hd, kvHeads: nKV };
}
