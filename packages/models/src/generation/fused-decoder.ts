import {
  type DecodeKernels,
  type DecodeLayerWeights,
  type DecodeMatrix,
  decodeKernels,
  type PreparedDecodeModel,
  prepareDecodeModel,
  type WeightDtype,
  writeCount,
} from '@rl2/engine';
import type * as tf from '@tensorflow/tfjs-core';
import { groupedQueryAttention } from '../layers/attention.js';
import { denseLinear } from '../layers/linear.js';
import { type DecoderModel, lmHeadWeight } from '../model/decoder-model.js';
import { decodeMatrix } from './generation-weights.js';
import type { KvDecoder } from './kv-decoder.js';

/**
 * A KV cache laid out for appends: per layer k/v [B, nKv, capacity, d] in plain memory. Row r
 * holds keys at columns padLeft[r] .. length-1; a step writes column `length` in place, so
 * nothing is copied per token (capacity grows by half when full).
 */
export interface AppendKv {
  layers: { k: Float32Array; v: Float32Array }[];
  rows: number;
  capacity: number;
  length: number;
  padLeft: Int32Array;
}

/** Capacity for `need` columns with room to grow. */
function grownCapacity(need: number): number {
  return need + Math.max(32, need >> 1);
}

/**
 * A prefill's capacity for `s` prompt columns and at most `room` new tokens per row: all of
 * them while that is at most max(s, 64) more (no copy while decoding; the bench's 128 + 128
 * fits), else the prompt doubled (a row that stops early reserved little).
 */
function prefillCapacity(s: number, room: number | undefined): number {
  if (room === undefined) return grownCapacity(s);
  return s + Math.max(1, Math.min(room, Math.max(s, 64)));
}

/**
 * Copies `from` rows `rows` (in that order) into a new cache of `length` columns and
 * `capacity`, each row's real columns right-aligned.
 */
function copyRows(
  parts: { kv: AppendKv; rows: number[] }[],
  length: number,
  capacity: number,
  kvHeads: number,
  d: number,
): AppendKv {
  const total = parts.reduce((a, p) => a + p.rows.length, 0);
  const padLeft = new Int32Array(total);
  const numLayers = parts[0]!.kv.layers.length;
  const layers = Array.from({ length: numLayers }, () => ({
    k: new Float32Array(total * kvHeads * capacity * d),
    v: new Float32Array(total * kvHeads * capacity * d),
  }));
  let to = 0;
  for (const { kv, rows } of parts) {
    const shift = length - kv.length;
    for (const r of rows) {
      const pad = kv.padLeft[r]!;
      padLeft[to] = pad + shift;
      for (let l = 0; l < numLayers; l++) {
        const src = kv.layers[l]!;
        const dst = layers[l]!;
        for (let h = 0; h < kvHeads; h++) {
          const s0 = ((r * kvHeads + h) * kv.capacity + pad) * d;
          const s1 = ((r * kvHeads + h) * kv.capacity + kv.length) * d;
          const t0 = ((to * kvHeads + h) * capacity + pad + shift) * d;
          dst.k.set(src.k.subarray(s0, s1), t0);
          dst.v.set(src.v.subarray(s0, s1), t0);
        }
      }
      to += 1;
    }
  }
  return { layers, rows: total, capacity, length, padLeft };
}

/** A model's parameter as a Float32Array (its storage on `native`), or undefined. */
function values(model: DecoderModel, name: string): Float32Array | undefined {
  const t = model.params.get(name) as tf.Tensor | undefined;
  if (!t) return undefined;
  const v = t.dataSync();
  return v instanceof Float32Array ? v : undefined;
}

/** A model's weight matrix as a decode matrix of `dtype`, or undefined. */
function matrix(model: DecoderModel, name: string, dtype: WeightDtype): DecodeMatrix | undefined {
  const t = model.params.get(name) as tf.Tensor | undefined;
  return t ? decodeMatrix(t, dtype) : undefined;
}

/**
 * Layer `i`'s weights, read at every step (training may have replaced them since); the
 * matrices as `dtype` (16-bit copies are remade only when a weight changes).
 */
function layerWeights(
  model: DecoderModel,
  i: number,
  dtype: WeightDtype = 'float32',
): DecodeLayerWeights {
  const p = `model.layers.${i}.`;
  const req = (name: string) => values(model, p + name)!;
  const opt = (name: string) => values(model, p + name);
  const mat = (name: string) => matrix(model, p + name, dtype)!;
  return {
    inputNorm: req('input_layernorm.weight'),
    q: mat('self_attn.q_proj.weight'),
    k: mat('self_attn.k_proj.weight'),
    v: mat('self_attn.v_proj.weight'),
    qBias: opt('self_attn.q_proj.bias'),
    kBias: opt('self_attn.k_proj.bias'),
    vBias: opt('self_attn.v_proj.bias'),
    qNorm: model.config.qkNorm ? req('self_attn.q_norm.weight') : undefined,
    kNorm: model.config.qkNorm ? req('self_attn.k_norm.weight') : undefined,
    o: mat('self_attn.o_proj.weight'),
    oBias: opt('self_attn.o_proj.bias'),
    postNorm: req('post_attention_layernorm.weight'),
    gate: mat('mlp.gate_proj.weight'),
    up: mat('mlp.up_proj.weight'),
    down: mat('mlp.down_proj.weight'),
    gateBias: opt('mlp.gate_proj.bias'),
    upBias: opt('mlp.up_proj.bias'),
    downBias: opt('mlp.down_proj.bias'),
  };
}

/**
 * The model's weights as one `PreparedDecodeModel` of `dtype`, remade only when a parameter
 * changed since the last call (a new tensor; new data: a weight load; or a write over its own
 * data: an in-place optimizer step, see `writeCount`); the check is one pass over the
 * parameter map, so a step builds no per-layer arrays.
 */
export function preparedWeights(
  model: DecoderModel,
  dtype: WeightDtype,
): () => PreparedDecodeModel {
  let prepared: PreparedDecodeModel | undefined;
  let seen: [tf.Variable, object, number][] = [];
  const dataId = (t: tf.Variable) => (t as unknown as { dataId: object }).dataId;
  const unchanged = () => {
    if (seen.length !== model.params.size) return false;
    let i = 0;
    for (const t of model.params.values()) {
      const [was, id, writes] = seen[i++]!;
      if (t !== was || dataId(t) !== id || writeCount(t) !== writes) return false;
    }
    return true;
  };
  return () => {
    if (prepared && unchanged()) return prepared;
    prepared = prepareDecodeModel(
      {
        embed: values(model, 'model.embed_tokens.weight')!,
        layers: Array.from({ length: model.config.numLayers }, (_, i) =>
          layerWeights(model, i, dtype),
        ),
        finalNorm: values(model, 'model.norm.weight')!,
        head: decodeMatrix(lmHeadWeight(model), dtype)!,
      },
      dtype,
    );
    seen = [...model.params.values()].map((t) => [t, dataId(t), writeCount(t)]);
    return prepared;
  };
}

/** RoPE tables [N, d] (rotate-half layout) of N positions. */
export function ropeRows(
  positions: number[],
  invFreq: Float64Array,
): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const d = 2 * half;
  const cos = new Float32Array(positions.length * d);
  const sin = new Float32Array(positions.length * d);
  positions.forEach((pos, t) => {
    for (let i = 0; i < half; i++) {
      const a = pos * invFreq[i]!;
      cos[t * d + i] = cos[t * d + half + i] = Math.cos(a);
      sin[t * d + i] = sin[t * d + half + i] = Math.sin(a);
    }
  });
  return { cos, sin };
}

/** Whether every weight the fused step reads is a float32 parameter of the plain dense model. */
export function fusable(model: DecoderModel): boolean {
  const c = model.config;
  if (
    model.linear !== denseLinear ||
    model.attention !== groupedQueryAttention ||
    model.embedding ||
    c.head !== 'causal-lm'
  )
    return false;
  if (!values(model, 'model.embed_tokens.weight') || !values(model, 'model.norm.weight'))
    return false;
  try {
    if (!(lmHeadWeight(model).dataSync() instanceof Float32Array)) return false;
  } catch {
    return false;
  }
  return Array.from({ length: c.numLayers }, (_, i) => layerWeights(model, i)).every((w) =>
    [w.inputNorm, w.q, w.k, w.v, w.o, w.postNorm, w.gate, w.up, w.down].every(
      (x) => x !== undefined,
    ),
  );
}

/** Options of `fusedDecoder`. */
export interface FusedDecoderOptions {
  /**
   * Element type of the weight matrices the products stream (default float32): bfloat16 or
   * float16 halves the bytes a step reads; the parameters stay float32 and a 16-bit copy of
   * each matrix (LM head included) is made when it first runs or after it changes.
   */
  weightDtype?: WeightDtype;
}

/**
 * The fused native decoder: a prefill and each decode step are one addon call each (the
 * embedding, every layer, the final norm and the LM head) over an `AppendKv`; the prefill's
 * layers take all prompt tokens at once (tiled causal attention) and write the cache directly. The logits it returns
 * are a view of one buffer, valid until its next prefill or step. Undefined off the
 * `native` backend or for models with replaced linear layers, attention or embedding
 * (tensor/context parallel, LoRA): those take `tfjsDecoder`.
 */
export function fusedDecoder(
  model: DecoderModel,
  options: FusedDecoderOptions = {},
): KvDecoder<AppendKv> | undefined {
  const kernels: DecodeKernels | undefined = decodeKernels();
  if (!kernels || !fusable(model)) return undefined;
  const dtype = options.weightDtype ?? 'float32';
  const c = model.config;
  const d = c.headDim;
  const h = c.hiddenSize;
  const dims = (rows: number, tokens: number) => ({
    rows,
    hidden: h,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: d,
    intermediate: c.intermediateSize,
    tokens,
  });
  const grow = (kv: AppendKv): AppendKv =>
    kv.length < kv.capacity
      ? kv
      : copyRows(
          [{ kv, rows: [...kv.padLeft.keys()] }],
          kv.length,
          grownCapacity(kv.length + 1),
          c.numKvHeads,
          d,
        );
  const weights = preparedWeights(model, dtype);
  // one logits buffer for every call: a fresh [B, V] array per token is garbage V8 collects
  // late (tens of MiB of dead logits at the bench's 16 x 8192)
  let logitsBuffer = new Float32Array(0);
  /**
   * Next-token logits [B, V] of `tokens` (S per row, at `positions`), the whole model in one
   * addon call that writes the cache from column kv.length.
   */
  const forward = (tokens: number[], positions: number[], kv: AppendKv, s: number) => {
    const b = kv.rows;
    const { cos, sin } = ropeRows(positions, model.invFreq);
    if (logitsBuffer.length < b * c.vocabSize) logitsBuffer = new Float32Array(b * c.vocabSize);
    const logits = logitsBuffer.subarray(0, b * c.vocabSize);
    const caches = {
      k: kv.layers.map((l) => l.k),
      v: kv.layers.map((l) => l.v),
      capacity: kv.capacity,
      length: kv.length,
      padLeft: kv.padLeft,
    };
    kernels.forward(
      weights(),
      Int32Array.from(tokens),
      { ...dims(b, s), vocab: c.vocabSize },
      c.rmsNormEps,
      cos,
      sin,
      caches,
      logits,
    );
    return logits;
  };
  return {
    async prefill(tokens, positions, pad, room) {
      const b = tokens.length;
      const s = tokens[0]!.length;
      const capacity = prefillCapacity(s, room);
      const kv: AppendKv = {
        layers: Array.from({ length: c.numLayers }, () => ({
          k: new Float32Array(b * c.numKvHeads * capacity * d),
          v: new Float32Array(b * c.numKvHeads * capacity * d),
        })),
        rows: b,
        capacity,
        length: 0,
        padLeft: Int32Array.from(pad),
      };
      const logits = forward(tokens.flat(), positions.flat(), kv, s);
      return { logits, kv: { ...kv, length: s } };
    },
    async step(kv0, tokens, positions) {
      const kv = grow(kv0);
      return { logits: forward(tokens, positions, kv, 1), kv: { ...kv, length: kv.length + 1 } };
    },
    merge(a, b) {
      if (!a) return b;
      const length = Math.max(a.length, b.length);
      // keep the room either cache reserved (a prefill's `room`), at least grownCapacity's
      const room = Math.max(a.capacity - a.length, b.capacity - b.length);
      return copyRows(
        [
          { kv: a, rows: [...a.padLeft.keys()] },
          { kv: b, rows: [...b.padLeft.keys()] },
        ],
        length,
        Math.max(grownCapacity(length), length + room),
        c.numKvHeads,
        d,
      );
    },
    select(kv, keep) {
      if (keep.length === 0) return undefined;
      const drop = Math.min(...keep.map((r) => kv.padLeft[r]!));
      if (drop === 0 && keep.length === kv.rows && keep.every((r, i) => r === i)) return kv;
      const length = kv.length - drop;
      return copyRows([{ kv, rows: keep }], length, grownCapacity(length), c.numKvHeads, d);
    },
    dispose() {},
  };
}
