import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { type AttentionKernel, blockedAttention, groupedQueryAttention } from './attention.js';
import type { LinearFactory, ParamLookup } from './linear.js';
import { rmsNorm } from './rms-norm.js';
import { applyRotary } from './rotary.js';
import { flashAttention, fusedSwiGlu } from '@rl2/engine';
import { ModelsError } from '../errors.js';

/**
 * What every layer of one forward shares: shapes, RoPE tables [N, 1, d] and either the mask
 * [B, S, L] or, for one packed row of several sequences, the sequence lengths and a causal
 * mask [1, len, len] per distinct length (attention then runs per sequence: no T x T work).
 */
export interface LayerContext {
  config: ModelConfig;
  linear: LinearFactory;
  attention: AttentionKernel;
  rows: number;
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  /** rotate_half as a matrix [d, d] (see `rotateHalfMatrix`). */
  rotate: tf.Tensor2D;
  mask?: tf.Tensor3D;
  segments?: PackedSegments;
  /**
   * Segment ids [B, S] (int32) for the tiled causal attention kernel (`flashAttention`): set
   * instead of `mask`/`segments` when the default attention runs on a backend that has it;
   * token i sees token j iff j <= i within the same segment. Never with a KV cache.
   */
  causalSegments?: tf.Tensor2D;
}

/** Sequence lengths of one packed row and the causal mask of each distinct length. */
export interface PackedSegments {
  lengths: number[];
  masks: Map<number, tf.Tensor3D>;
}

/**
 * Keys/values of earlier tokens of one layer, after RoPE: [B, nKv, L, d] each. A decoding
 * cache keeps the last few steps in `kRecent`/`vRecent` (the keys are concat(k, kRecent)) so a
 * step appends to a short tail instead of copying the whole cache.
 */
export interface LayerKv {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
  kRecent?: tf.Tensor4D;
  vRecent?: tf.Tensor4D;
}

/** Tail length at which a decoding cache's recent block is folded into the main block. */
export const RECENT_KV_LIMIT = 32;

/**
 * One pre-norm decoder block (HF `LlamaDecoderLayer` / `Qwen2DecoderLayer` / `Qwen3DecoderLayer`):
 * x += o_proj(attn(rope(q), rope(k), v)); x += down(silu(gate(n)) * up(n)).
 * `x` [N, H] with N = rows * S. With `past`, new keys/values are appended to it; the returned
 * `kv` holds all of them (for the KV cache).
 */
export function decoderLayer(
  x: tf.Tensor2D,
  layer: number,
  p: ParamLookup,
  ctx: LayerContext,
  past?: LayerKv,
): { x: tf.Tensor2D; kv: LayerKv } {
  const { config: c, linear } = ctx;
  const pre = `model.layers.${layer}.`;
  const n = x.shape[0];
  const b = ctx.rows;
  const s = n / b;
  const get = (name: string) => p.get(pre + name)!;
  const h = rmsNorm(x, get('input_layernorm.weight'), c.rmsNormEps);
  const qOut = linear(`${pre}self_attn.q_proj`, p).forward(h);
  const kOut = linear(`${pre}self_attn.k_proj`, p).forward(h);
  // head counts from the projections' widths: a tensor-parallel linear holds this rank's heads only
  const numHeads = qOut.shape[1] / c.headDim;
  const numKvHeads = kOut.shape[1] / c.headDim;
  let q = tf.reshape(qOut, [n, numHeads, c.headDim]) as tf.Tensor3D;
  let k = tf.reshape(kOut, [n, numKvHeads, c.headDim]) as tf.Tensor3D;
  const v = tf.reshape(linear(`${pre}self_attn.v_proj`, p).forward(h), [
    b,
    s,
    numKvHeads,
    c.headDim,
  ]);
  if (c.qkNorm) {
    q = rmsNorm(q, get('self_attn.q_norm.weight'), c.rmsNormEps);
    k = rmsNorm(k, get('self_attn.k_norm.weight'), c.rmsNormEps);
  }
  q = applyRotary(q, ctx.cos, ctx.sin, ctx.rotate);
  k = applyRotary(k, ctx.cos, ctx.sin, ctx.rotate);
  // [B, S, nKv, d] -> [B, nKv, S, d] (a reshape when S = 1, i.e. while decoding)
  const kvShape: [number, number, number, number] = [b, numKvHeads, s, c.headDim];
  let kt = (
    s === 1
      ? tf.reshape(k, kvShape)
      : tf.transpose(tf.reshape(k, [b, s, numKvHeads, c.headDim]), [0, 2, 1, 3])
  ) as tf.Tensor4D;
  let vt = (s === 1 ? tf.reshape(v, kvShape) : tf.transpose(v, [0, 2, 1, 3])) as tf.Tensor4D;
  const q4 = tf.reshape(q, [b, s, numHeads, c.headDim]) as tf.Tensor4D;
  let attn: tf.Tensor2D;
  let kv: LayerKv;
  if (past && ctx.attention === groupedQueryAttention && ctx.mask) {
    // decoding with the default kernel: append to the recent tail, attend over both blocks
    const kr = past.kRecent ? tf.concat([past.kRecent, kt], 2) : kt;
    const vr = past.vRecent ? tf.concat([past.vRecent, vt], 2) : vt;
    attn = blockedAttention(
      q4,
      [
        { k: past.k, v: past.v },
        { k: kr, v: vr },
      ],
      ctx.mask,
    );
    kv =
      kr.shape[2] >= RECENT_KV_LIMIT
        ? { k: tf.concat([past.k, kr], 2), v: tf.concat([past.v, vr], 2) }
        : { k: past.k, v: past.v, kRecent: kr, vRecent: vr };
  } else {
    if (past) {
      kt = tf.concat([past.k, ...(past.kRecent ? [past.kRecent] : []), kt], 2);
      vt = tf.concat([past.v, ...(past.vRecent ? [past.vRecent] : []), vt], 2);
    }
    kv = { k: kt, v: vt };
    const flash =
      ctx.causalSegments && !past ? flashAttention(q4, kt, vt, ctx.causalSegments) : undefined;
    if (flash) {
      attn = flash;
    } else if (ctx.segments && !past) {
      // block-diagonal attention as one small causal attention per sequence of the packed row
      const { lengths, masks } = ctx.segments;
      const qs = tf.split(q4, lengths, 1) as tf.Tensor4D[];
      const ks = tf.split(kt, lengths, 2) as tf.Tensor4D[];
      const vs = tf.split(vt, lengths, 2) as tf.Tensor4D[];
      attn = tf.concat(
        lengths.map((len, i) => ctx.attention(qs[i]!, ks[i]!, vs[i]!, masks.get(len)!)),
        0,
      );
    } else {
      if (!ctx.mask)
        throw new ModelsError(
          'INVALID_ARGUMENT',
          'decoderLayer: LayerContext needs a mask, packed segments or causalSegments on a backend with flashAttention',
        );
      attn = ctx.attention(q4, kt, vt, ctx.mask);
    }
  }
  const x1 = tf.add(x, linear(`${pre}self_attn.o_proj`, p).forward(attn)) as tf.Tensor2D;
  const h2 = rmsNorm(x1, get('post_attention_layernorm.weight'), c.rmsNormEps);
  const gate = linear(`${pre}mlp.gate_proj`, p).forward(h2);
  const up = linear(`${pre}mlp.up_proj`, p).forward(h2);
  const act = (fusedSwiGlu(gate, up) ?? tf.mul(tf.mul(gate, tf.sigmoid(gate)), up)) as tf.Tensor2D; // silu(g) * u
  const out = tf.add(x1, linear(`${pre}mlp.down_proj`, p).forward(act)) as tf.Tensor2D;
  return { x: out, kv };
}

/** Names of the parameters layer `layer` reads (used to pass them explicitly for recomputation). */
export function layerParamNames(c: ModelConfig, layer: number): string[] {
  const pre = `model.layers.${layer}.`;
  const names = ['input_layernorm.weight', 'post_attention_layernorm.weight'];
  for (const m of ['q_proj', 'k_proj', 'v_proj']) {
    names.push(`self_attn.${m}.weight`);
    if (c.qkvBias) names.push(`self_attn.${m}.bias`);
  }
  names.push('self_attn.o_proj.weight');
  if (c.outputBias) names.push('self_attn.o_proj.bias');
  for (const m of ['gate_proj', 'up_proj', 'down_proj']) {
    names.push(`mlp.${m}.weight`);
    if (c.mlpBias) names.push(`mlp.${m}.bias`);
  }
  if (c.qkNorm) names.push('self_attn.q_norm.weight', 'self_attn.k_norm.weight');
  return names.map((x) => pre + x);
}
