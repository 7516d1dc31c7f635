import { ParallelError } from '../errors.js';
import { planDeviceMesh } from '../mesh/device-mesh.js';
import { tensorParallelHeads } from '../layout/tensor-parallel.js';
import { type DecoderConfig, type ParameterCount, countParameters } from './count-parameters.js';

export interface PlanMemoryOptions {
  /** Hugging Face config.json of the model. */
  config: DecoderConfig;
  /** Total processes (devices) in the job. */
  gpus: number;
  tp?: number;
  cp?: number;
  ddp?: number;
  /**
   * Tokens one device holds in a micro-batch (RL2's max_length_per_device, default 8192);
   * a packed row spans cp*tp*T tokens, and tp matmuls see the tp group's T*tp tokens.
   */
  maxLengthPerDevice?: number;
  /** Training dtype: float32 (tfjs default) or bfloat16 with float32 master weights. */
  dtype?: 'float32' | 'bfloat16';
  /** Recompute each layer in backward, keeping only layer inputs (default true, as RL2). */
  gradientCheckpointing?: boolean;
  /**
   * Attention runs in tiles (@rl2/engine `flashAttention`, the `native` backend's default for
   * training and prefill, with or without context parallelism): nothing T x T is held. Default
   * true; false plans the [heads, T, T] scores of the composite ops.
   */
  tiledAttention?: boolean;
}

/** Bytes one device needs, by kind. */
export interface MemoryPlan {
  layout: { gpus: number; ddp: number; fsdp: number; tp: number; dp: number; cp: number };
  /** How attention was planned: `tiled` (no T x T tensor) or `scores` (full score matrices). */
  attention: 'tiled' | 'scores';
  parameters: ParameterCount;
  /** Parameters stored per device (after tp and fsdp sharding). */
  paramsPerDevice: number;
  bytes: {
    parameters: number;
    gradients: number;
    /** AdamW m and v in float32, plus float32 master weights under bfloat16. */
    optimizerState: number;
    /** FSDP working set: one layer gathered for use plus the next prefetched, and its full gradient before reduce-scatter. */
    gatheredLayers: number;
    /** Saved layer inputs (checkpointing) or every layer's intermediates, plus one layer's recompute. */
    activations: number;
    /**
     * Attention of one layer beyond its inputs and output: with tiled attention the log-sum-exp
     * of each query [heads/tp, T*tp], and under cp > 1 the K/V all-gathered over the row
     * [T*tp*cp, kvHeads/tp, headDim] each; else scores and probabilities [heads/tp, T*tp, T*tp*cp]
     * (each query against every key of its row).
     */
    attentionScores: number;
    /** Float32 logits [T*tp, V/tp] (sequence gathered, vocabulary split) and their gradient. */
    logits: number;
    total: number;
  };
}

/**
 * Estimate per-device memory of a training step for a decoder under RL2's layout
 * (model mesh ddp x fsdp x tp, data mesh dp x cp x tp; fsdp = gpus / (ddp*tp)).
 * Parameters: tp-split matrices / tp + replicated norms, then / fsdp. Gradients alike.
 * Activations per token per layer with checkpointing: the layer input [H]; the recomputed
 * layer holds about 2H + (q+2kv)/tp + H/tp + 3I/tp values per token (tp matmuls see the
 * whole sequence, T*tp tokens). An estimate for layout choices, not an allocator trace.
 */
export function planMemory(o: PlanMemoryOptions): MemoryPlan {
  const tp = o.tp ?? 1;
  const cp = o.cp ?? 1;
  const ddp = o.ddp ?? 1;
  const mesh = planDeviceMesh(o.gpus, 0, { tp, cp, ddp });
  const p = countParameters(o.config);
  const c = o.config;
  const { heads, kvHeads } = tensorParallelHeads(c.num_attention_heads, p.kvHeads, tp);
  if (c.vocab_size % tp !== 0)
    throw new ParallelError(
      'LAYOUT',
      `vocab_size=${c.vocab_size} is not divisible by tp=${tp}; pad the vocabulary or choose another tp.`,
    );
  const fsdp = mesh.sizes.fsdp;
  const L = c.num_hidden_layers;
  const perDeviceUnsharded =
    L * (p.layerSharded / tp + p.layerReplicated) + p.vocab / tp + p.finalNorm;
  const paramsPerDevice = Math.ceil(perDeviceUnsharded / fsdp);
  const wBytes = o.dtype === 'bfloat16' ? 2 : 4;
  const T = o.maxLengthPerDevice ?? 8192;
  const H = c.hidden_size;
  const hd = p.headDim;
  const layerPerTp = p.layerSharded / tp + p.layerReplicated;
  const perTokenLayer =
    2 * H +
    ((c.num_attention_heads + 2 * p.kvHeads) * hd) / tp +
    (c.num_attention_heads * hd) / tp +
    (3 * c.intermediate_size) / tp;
  const checkpointing = o.gradientCheckpointing ?? true;
  const tiled = o.tiledAttention ?? true;
  const gatheredKv = cp > 1 ? 2 * (T * tp * cp) * kvHeads * p.headDim * wBytes : 0;
  const activations = checkpointing
    ? (L * T * H + T * tp * perTokenLayer) * wBytes
    : L * T * tp * perTokenLayer * wBytes;
  const bytes = {
    parameters: paramsPerDevice * wBytes,
    gradients: paramsPerDevice * wBytes,
    optimizerState: paramsPerDevice * (8 + (wBytes === 2 ? 4 : 0)),
    gatheredLayers: fsdp > 1 ? Math.ceil(layerPerTp * (2 * wBytes + wBytes)) : 0,
    activations: Math.ceil(activations),
    // tp ranks see the whole (sequence-gathered) chunk of T*tp queries, keys over the cp group too
    attentionScores: tiled
      ? heads * (T * tp) * 4 + gatheredKv
      : 2 * heads * (T * tp) * (T * tp * cp) * 4,
    logits: 2 * (T * tp) * (c.vocab_size / tp) * 4,
    total: 0,
  };
  bytes.total = Object.entries(bytes).reduce((s, [k, v]) => (k === 'total' ? s : s + v), 0);
  return {
    layout: { gpus: o.gpus, ddp, fsdp, tp, dp: mesh.sizes.dp, cp },
    attention: tiled ? 'tiled' : 'scores',
    parameters: p,
    paramsPerDevice,
    bytes,
  };
}
