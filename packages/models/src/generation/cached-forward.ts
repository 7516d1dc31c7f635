import * as tf from '@tensorflow/tfjs-core';
import { hasFlashAttention } from '@rl2/engine';
import { groupedQueryAttention, MASKED } from '../layers/attention.js';
import { decoderLayer, type LayerContext, type LayerKv } from '../layers/decoder-layer.js';
import { rmsNorm } from '../layers/rms-norm.js';
import { ropeTables, rotateHalfMatrix } from '../layers/rotary.js';
import { type DecoderModel, lmHeadWeight } from '../model/decoder-model.js';

/**
 * Keys/values of a batch of left-padded rows: per layer [B, nKv, L, d]. Row r holds real
 * tokens at columns padLeft[r] .. L-1; columns before are padding nobody attends to.
 */
export interface KvBatch {
  layers: LayerKv[];
  padLeft: number[];
  length: number;
}

/**
 * One incremental forward: S new tokens per row (left-padded by `newPad[r]` within the S),
 * attending to the cache and causally to each other. Returns the next-token logits of each
 * row's last position [B, V] (this rank's [B, V/tp] vocabulary slice when the LM head is
 * vocab-parallel) and the grown cache (the caller disposes the old one).
 */
export function cachedForward(
  model: DecoderModel,
  tokens: number[][],
  positions: number[][],
  newPad: number[],
  past?: KvBatch,
): { logits: tf.Tensor2D; kv: KvBatch } {
  const c = model.config;
  const b = tokens.length;
  const s = tokens[0]!.length;
  const pastLen = past?.length ?? 0;
  const total = pastLen + s;
  const padLeft = past ? past.padLeft : newPad;
  // a prefill with the default kernel: tiled causal attention, the left padding of each row
  // its own segment (no [B, S, S] mask)
  const flash = !past && model.attention === groupedQueryAttention && hasFlashAttention();
  // allowed(r, i, j): key j is real for row r and not in the future of query i
  const m = new Float32Array(flash ? 0 : b * s * total);
  for (let r = 0; r < (flash ? 0 : b); r++) {
    for (let i = 0; i < s; i++) {
      for (let j = 0; j < total; j++) {
        const real = j < pastLen ? j >= padLeft[r]! : j - pastLen >= newPad[r]!;
        m[(r * s + i) * total + j] = real && j <= pastLen + i ? 0 : MASKED;
      }
    }
  }
  const out = tf.tidy((): tf.TensorContainer => {
    const { cos, sin } = ropeTables(positions.flat(), model.invFreq);
    const ctx: LayerContext = {
      config: c,
      linear: model.linear,
      attention: model.attention,
      rows: b,
      cos,
      sin,
      rotate: rotateHalfMatrix(c.headDim),
    };
    if (flash) {
      const seg = Int32Array.from({ length: b * s }, (_, i) =>
        i % s < newPad[Math.floor(i / s)]! ? -1 : 0,
      );
      ctx.causalSegments = tf.tensor2d(seg, [b, s], 'int32');
    } else ctx.mask = tf.tensor3d(m, [b, s, total]);
    const ids = tf.tensor1d(Int32Array.from(tokens.flat()), 'int32');
    // a replaced embedding (vocab-parallel under tensor parallelism) looks up its own shard
    let x = model.embedding
      ? model.embedding(ids, model.params)
      : (tf.gather(model.params.get('model.embed_tokens.weight')!, ids) as tf.Tensor2D);
    const layers: LayerKv[] = [];
    for (let i = 0; i < c.numLayers; i++) {
      const res = decoderLayer(x, i, model.params, ctx, past?.layers[i]);
      x = res.x;
      layers.push(res.kv);
    }
    const lastRows = tf.range(s - 1, b * s, s, 'int32');
    const h = rmsNorm(tf.gather(x, lastRows), model.params.get('model.norm.weight')!, c.rmsNormEps);
    return {
      logits: tf.matMul(h, lmHeadWeight(model), false, true),
      layers: layers.map((l) => ({ ...l })),
    };
  }) as unknown as { logits: tf.Tensor2D; layers: LayerKv[] };
  return { logits: out.logits, kv: { layers: out.layers, padLeft: [...padLeft], length: total } };
}

/** The tensors a cache holds. */
function kvTensors(kv: KvBatch): tf.Tensor[] {
  return kv.layers.flatMap((l) => [
    l.k,
    l.v,
    ...(l.kRecent ? [l.kRecent] : []),
    ...(l.vRecent ? [l.vRecent] : []),
  ]);
}

/** Frees a cache, except tensors still held by `keep` (a decoding step shares the main block). */
export function disposeKv(kv: KvBatch | undefined, keep?: KvBatch): void {
  if (!kv) return;
  const kept = new Set(keep ? kvTensors(keep) : []);
  tf.dispose(kvTensors(kv).filter((t) => !kept.has(t)));
}

/** Folds each layer's recent tail into its main block. Consumes the input. */
function flattenKv(kv: KvBatch): KvBatch {
  if (kv.layers.every((l) => !l.kRecent)) return kv;
  const layers = kv.layers.map((l) =>
    l.kRecent && l.vRecent
      ? { k: tf.concat([l.k, l.kRecent], 2), v: tf.concat([l.v, l.vRecent], 2) }
      : { k: l.k, v: l.v },
  );
  const flat = { ...kv, layers };
  disposeKv(kv, flat);
  return flat;
}

/**
 * Concatenates two caches row-wise, left-padding the shorter one with zero columns so both
 * have the same length. Consumes (disposes) both inputs.
 */
export function mergeKv(a0: KvBatch | undefined, b0: KvBatch): KvBatch {
  if (!a0) return b0;
  const a = flattenKv(a0);
  const b = flattenKv(b0);
  const length = Math.max(a.length, b.length);
  const grow = (kv: KvBatch, t: tf.Tensor4D) =>
    kv.length === length
      ? t
      : (tf.pad(t, [
          [0, 0],
          [0, 0],
          [length - kv.length, 0],
          [0, 0],
        ]) as tf.Tensor4D);
  const layers = a.layers.map((la, i) => {
    const lb = b.layers[i]!;
    return tf.tidy(() => ({
      k: tf.concat([grow(a, la.k), grow(b, lb.k)], 0) as tf.Tensor4D,
      v: tf.concat([grow(a, la.v), grow(b, lb.v)], 0) as tf.Tensor4D,
    }));
  });
  const padLeft = [
    ...a.padLeft.map((p) => p + length - a.length),
    ...b.padLeft.map((p) => p + length - b.length),
  ];
  disposeKv(a);
  disposeKv(b);
  return { layers, padLeft, length };
}

/**
 * Keeps rows `keep` (in that order) and drops leading columns that are padding in every kept
 * row. Consumes the input; returns undefined when no row is kept.
 */
export function selectKvRows(kv0: KvBatch, keep: number[]): KvBatch | undefined {
  if (keep.length === 0) {
    disposeKv(kv0);
    return undefined;
  }
  const kv = flattenKv(kv0);
  const padLeft = keep.map((r) => kv.padLeft[r]!);
  const drop = Math.min(...padLeft);
  const length = kv.length - drop;
  const idx = keep.every((r, i) => r === i) && keep.length === kv.padLeft.length ? undefined : keep;
  if (idx === undefined && drop === 0) return kv;
  const layers = kv.layers.map((l) =>
    tf.tidy(() => {
      const pick = (t: tf.Tensor4D) => {
        const rows = idx ? (tf.gather(t, tf.tensor1d(idx, 'int32')) as tf.Tensor4D) : t;
        return drop > 0 ? tf.slice(rows, [0, 0, drop, 0], [-1, -1, length, -1]) : rows;
      };
      return { k: pick(l.k), v: pick(l.v) };
    }),
  );
  disposeKv(kv);
  return { layers, padLeft: padLeft.map((p) => p - drop), length };
}
