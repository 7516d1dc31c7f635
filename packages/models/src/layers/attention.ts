import * as tf from '@tensorflow/tfjs-core';
import { fusedAttention } from '@rl2/engine';

/**
 * Scaled dot-product attention with grouped-query heads (Ainslie et al. 2023,
 * https://arxiv.org/abs/2305.13245): query head h reads kv head floor(h / rep), as HF `repeat_kv`.
 * `q` [B, S, nH, d], `k`/`v` [B, nKv, L, d], `mask` additive [B, S, L] (0 or -1e9).
 * Returns [B*S, nH*d]. Query heads of one kv group are folded into the row axis so K/V are
 * never copied per head. Context parallelism swaps this function (see `DecoderModel.attention`);
 * a replacement is called once per layer with the whole row and its block-diagonal mask (only
 * the default kernel is called per sequence of a packed row).
 */
export type AttentionKernel = (
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  mask: tf.Tensor3D,
) => tf.Tensor2D;

/** The default kernel: one fused native call on `native` (no [B, H, S, L] tensors), composite ops elsewhere. */
export const groupedQueryAttention: AttentionKernel = (q, k, v, mask) =>
  fusedAttention(q, k, v, mask) ?? blockedAttention(q, [{ k, v }], mask);

/**
 * `groupedQueryAttention` over keys/values held in several blocks along the length axis
 * (a KV cache plus its recent tail): scores of each block are concatenated, one softmax runs
 * over all of them, and the block outputs are summed. Only the [.., S, L] scores are copied,
 * never the cached keys and values. `mask` [B, S, sum of block lengths].
 */
export function blockedAttention(
  q: tf.Tensor4D,
  blocks: { k: tf.Tensor4D; v: tf.Tensor4D }[],
  mask: tf.Tensor3D,
): tf.Tensor2D {
  const [b, s, nH, d] = q.shape;
  const nKv = blocks[0]!.k.shape[1];
  const rep = nH / nKv;
  const lengths = blocks.map((bl) => bl.k.shape[2]);
  const l = lengths.reduce((a, x) => a + x, 0);
  // scale q rather than the scores: [B, S, nH, d] is smaller than [B, nH, S, L] when L > d
  const qs = tf.mul(q, 1 / Math.sqrt(d));
  // [B, S, nKv, rep, d] -> [B, nKv, rep, S, d] -> [B*nKv, rep*S, d]; with one query per row
  // (decoding) the transposes only move size-1 axes: reshapes suffice
  const qg = tf.reshape(
    s === 1 ? qs : tf.transpose(tf.reshape(qs, [b, s, nKv, rep, d]), [0, 2, 3, 1, 4]),
    [b * nKv, rep * s, d],
  );
  const flat = (t: tf.Tensor4D) => tf.reshape(t, [b * nKv, t.shape[2], d]) as tf.Tensor3D;
  const parts = blocks.map((bl) => tf.matMul(qg, flat(bl.k), false, true));
  const scores = parts.length === 1 ? parts[0]! : tf.concat(parts, 2);
  const masked = tf.add(tf.reshape(scores, [b, nKv, rep, s, l]), tf.reshape(mask, [b, 1, 1, s, l]));
  const probs = tf.reshape(tf.softmax(masked), [b * nKv, rep * s, l]) as tf.Tensor3D;
  const pieces = blocks.length === 1 ? [probs] : (tf.split(probs, lengths, 2) as tf.Tensor3D[]);
  const outs = pieces.map((p, i) => tf.matMul(p, flat(blocks[i]!.v)));
  const summed = outs.length === 1 ? outs[0]! : tf.addN(outs);
  const out = tf.reshape(summed, [b, nKv, rep, s, d]);
  return tf.reshape(s === 1 ? out : tf.transpose(out, [0, 3, 1, 2, 4]), [b * s, nH * d]);
}

/** Additive mask value for disallowed pairs: large enough that exp underflows to 0 in float32. */
export const MASKED = -1e9;

/**
 * Block-diagonal causal mask for packed rows: token i may attend to j iff both belong to the
 * same sequence (`segmentIds`) and j <= i. `segmentIds` [rows*T] row-major. Returns [rows, T, T].
 */
export function packedCausalMask(segmentIds: ArrayLike<number>, rows: number): tf.Tensor3D {
  const t = segmentIds.length / rows;
  const m = new Float32Array(rows * t * t);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < t; i++) {
      const si = segmentIds[r * t + i];
      const base = (r * t + i) * t;
      for (let j = 0; j < t; j++) {
        m[base + j] = j <= i && segmentIds[r * t + j] === si ? 0 : MASKED;
      }
    }
  }
  return tf.tensor3d(m, [rows, t, t]);
}

/**
 * Lengths of the contiguous runs of `segmentIds` in a single row, or undefined when the row
 * holds one sequence or an id reappears after another (then the full mask is needed).
 */
export function contiguousSegments(segmentIds: ArrayLike<number>): number[] | undefined {
  const lengths: number[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < segmentIds.length; i++) {
    const id = segmentIds[i]!;
    if (i > 0 && id === segmentIds[i - 1]) {
      lengths[lengths.length - 1]! += 1;
      continue;
    }
    if (seen.has(id)) return undefined;
    seen.add(id);
    lengths.push(1);
  }
  return lengths.length > 1 ? lengths : undefined;
}

/** Causal mask [1, len, len] (0 on and below the diagonal, MASKED above). */
export function causalMask(len: number): tf.Tensor3D {
  const m = new Float32Array(len * len);
  for (let i = 0; i < len; i++) for (let j = i + 1; j < len; j++) m[i * len + j] = MASKED;
  return tf.tensor3d(m, [1, len, len]);
}
