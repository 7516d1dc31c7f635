import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { unaryCustomGrad, valuesOf } from './custom-grad.js';
import type { ZigzagPlan } from './zigzag.js';

/** Take this cp rank's tokens (axis 0) of a tensor over the whole packed row. */
export function zigzagSplit<T extends tf.Tensor>(row: T, plan: ZigzagPlan, cpRank: number): T {
  if (row.shape[0] !== plan.length)
    throw new ParallelError(
      'LAYOUT',
      `zigzagSplit: axis 0 has ${row.shape[0]} tokens but the plan's row has ${plan.length}.`,
    );
  return tf.gather(row, plan.indices[cpRank]!, 0) as T;
}

/** Inverse of the split on gathered rank-major tokens: `[cp * Tl, ...]` back to row order. */
export function zigzagMerge<T extends tf.Tensor>(rankMajor: T, plan: ZigzagPlan): T {
  return tf.gather(rankMajor, plan.inverse, 0) as T;
}

/**
 * All-gather axis 0 over cp into row order. `backward` says what each rank's gradient is:
 * `sum` (reduce-scatter) when every rank uses the gathered tensor for different outputs, as K/V
 * in attention; `own` (this rank's slice) when every rank computes the same replicated result
 * from it, as the loss over gathered outputs.
 */
export function allGatherContext<T extends tf.Tensor>(
  local: T,
  plan: ZigzagPlan,
  cp: ProcessGroup,
  backward: 'sum' | 'own',
): T {
  if (cp.size === 1) return local;
  const op = unaryCustomGrad((x) => ({
    value: tf.tensor(cp.allGather(valuesOf(x)), [x.shape[0]! * cp.size, ...x.shape.slice(1)]),
    gradFunc: (dy) => {
      if (backward === 'own')
        return tf.slice(dy, [cp.rank * x.shape[0]!, ...x.shape.slice(1).map(() => 0)], x.shape);
      return tf.tensor(cp.reduceScatter(valuesOf(dy), 'sum'), x.shape);
    },
  }));
  return zigzagMerge(op(local), plan) as T;
}

/**
 * A tiled causal attention over a subset of each row's positions, with the signature of
 * `@rl2/engine`'s `flashAttention`: q [B, Tq, Hq, D] at key positions `queryPositions` [B, Tq]
 * over k/v [B, Hkv, Tk, D] within `segments` [B, Tk]; returns [B*Tq, Hq*D], or undefined where
 * the backend has no such kernel. Injected so this package keeps no engine dependency.
 */
export type TiledAttention = (
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  segments: tf.Tensor2D,
  queryPositions: tf.Tensor2D,
) => tf.Tensor2D | undefined;

/** One sequence of the packed row as a cp rank sees it. */
interface LocalSequence {
  /** Row position of its first token and its length in the row. */
  start: number;
  len: number;
  /** Its tokens on this rank: local positions [from, to) (both zigzag chunks are consecutive). */
  from: number;
  to: number;
}

/**
 * Groups sequences (longest first) into buckets that are computed as one padded batch, closing
 * a bucket when padding it would more than double its attention work.
 */
function bucketSequences(seqs: LocalSequence[]): LocalSequence[][] {
  const sorted = [...seqs].sort((a, b) => b.len - a.len);
  const buckets: LocalSequence[][] = [];
  let bucket: LocalSequence[] = [];
  let work = 0;
  let maxLocal = 0;
  for (const s of sorted) {
    const local = s.to - s.from;
    const padded = (bucket.length + 1) * (bucket[0]?.len ?? s.len) * Math.max(maxLocal, local);
    if (bucket.length > 0 && padded > 2 * (work + local * s.len)) {
      buckets.push(bucket);
      bucket = [];
      work = 0;
      maxLocal = 0;
    }
    bucket.push(s);
    work += local * s.len;
    maxLocal = Math.max(maxLocal, local);
  }
  if (bucket.length > 0) buckets.push(bucket);
  return buckets;
}

/**
 * Causal attention of this cp rank's queries over the whole packed row ("Llama context
 * parallelism", https://arxiv.org/abs/2407.21783 §3.3.2: K/V all-gathered, each rank attends
 * for its own queries). Tokens attend within their own sequence to positions <= their own:
 * sequences are bucketed by length and each bucket runs as one padded batch (its local queries
 * against its gathered keys), so the work is about the sum of the sequences' squares, not the
 * square of the packed row, in a handful of ops per layer. With `tiled` (a kernel that takes
 * query positions, e.g. `@rl2/engine` `flashAttention` on the native backend) a bucket runs in
 * tiles, so no [queries, keys] score block exists; without it, or where it returns undefined,
 * the bucket's scores are one masked block.
 * `q [Tl, Hq, D]`, `k`/`v [Tl, Hkv, D]` on this rank's zigzag tokens; GQA when Hq > Hkv.
 * Returns `[Tl, Hq, D]`; gradients to K/V flow back to their owners by reduce-scatter.
 */
export function contextParallelAttention(
  q: tf.Tensor3D,
  k: tf.Tensor3D,
  v: tf.Tensor3D,
  plan: ZigzagPlan,
  cp: ProcessGroup,
  tiled?: TiledAttention,
): tf.Tensor3D {
  const [tl, hq, d] = q.shape;
  const hkv = k.shape[1];
  if (hq % hkv !== 0)
    throw new ParallelError('LAYOUT', `query heads ${hq} are not a multiple of kv heads ${hkv}.`);
  const mine = plan.indices[cp.rank]!;
  if (mine.length !== tl)
    throw new ParallelError(
      'LAYOUT',
      `cp rank ${cp.rank} holds ${mine.length} tokens in the plan but q has ${tl}.`,
    );
  const t = plan.length;
  const seqs: LocalSequence[] = [];
  for (let i = 0; i < tl; ) {
    const seg = plan.segments[mine[i]!]!;
    let j = i;
    while (j < tl && plan.segments[mine[j]!] === seg) j++;
    const start = mine[i]! - plan.positions[mine[i]!]!;
    let len = 0;
    while (start + len < t && plan.segments[start + len] === seg) len++;
    seqs.push({ start, len, from: i, to: j });
    i = j;
  }
  // K/V all-gathered in row order, one zero row appended for padding
  const rep = hq / hkv;
  const expand = (x: tf.Tensor) =>
    rep === 1 ? x : tf.reshape(tf.tile(tf.expandDims(x, 2), [1, 1, rep, 1]), [t + 1, hq, d]); // repeat_interleave on heads
  const zerosKv = tf.zeros([1, hkv, d]);
  const kRows = tf.concat([allGatherContext(k, plan, cp, 'sum'), zerosKv]); // [T + 1, Hkv, D]
  const vRows = tf.concat([allGatherContext(v, plan, cp, 'sum'), zerosKv]);
  let kvAll: [tf.Tensor, tf.Tensor] | undefined; // [T + 1, Hq, D] each, for the masked path
  const qPadded = tf.concat([q, tf.zeros([1, hq, d])]); // [Tl + 1, Hq, D]
  const outs: tf.Tensor[] = [];
  const back = new Int32Array(tl); // local token -> its row in the concatenated bucket outputs
  let done = 0;
  for (const bucket of bucketSequences(seqs)) {
    const n = bucket.length;
    const kLen = Math.max(...bucket.map((s) => s.len));
    const qLen = Math.max(...bucket.map((s) => s.to - s.from));
    const kIdx = new Int32Array(n * kLen).fill(t);
    const qIdx = new Int32Array(n * qLen).fill(tl);
    // key index (position in its sequence) of each query; 0 for padding queries
    const qPos = new Int32Array(n * qLen);
    // additive mask [n, 1, qLen, kLen]: 0 for keys at or before the query's position in its sequence
    const mask = new Float32Array(n * qLen * kLen).fill(-1e30);
    bucket.forEach((s, b) => {
      for (let c = 0; c < s.len; c++) kIdx[b * kLen + c] = s.start + c;
      for (let a = 0; a < qLen; a++) {
        const row = (b * qLen + a) * kLen;
        if (a < s.to - s.from) {
          qIdx[b * qLen + a] = s.from + a;
          back[s.from + a] = done + b * qLen + a;
          qPos[b * qLen + a] = plan.positions[mine[s.from + a]!]!;
          mask.fill(0, row, row + qPos[b * qLen + a]! + 1);
        } else {
          mask[row] = 0; // a padding query attends to one key so its softmax stays finite; it is dropped
        }
      }
    });
    const qRows = tf.gather(qPadded, qIdx);
    const kvIdx = tf.tensor1d(kIdx, 'int32');
    const kvHeads = (x: tf.Tensor) =>
      tf.transpose(tf.reshape(tf.gather(x, kvIdx), [n, kLen, hkv, d]), [0, 2, 1, 3]) as tf.Tensor4D;
    const tiledOut = tiled?.(
      tf.reshape(qRows, [n, qLen, hq, d]),
      kvHeads(kRows),
      kvHeads(vRows),
      tf.zeros([n, kLen], 'int32'), // one sequence per bucket row; its padding keys lie after every query
      tf.tensor2d(qPos, [n, qLen], 'int32'),
    );
    if (tiledOut) {
      outs.push(tf.reshape(tiledOut, [n * qLen, hq, d]));
      done += n * qLen;
      continue;
    }
    kvAll ??= [expand(kRows), expand(vRows)];
    const heads = (x: tf.Tensor, len: number) =>
      tf.transpose(tf.reshape(x, [n, len, hq, d]), [0, 2, 1, 3]); // [n, Hq, len, D]
    const qh = heads(qRows, qLen);
    const kh = heads(tf.gather(kvAll[0], kIdx), kLen);
    const vh = heads(tf.gather(kvAll[1], kIdx), kLen);
    const scores = tf.add(
      tf.div(tf.matMul(qh, kh, false, true), Math.sqrt(d)),
      tf.tensor4d(mask, [n, 1, qLen, kLen]),
    );
    const out = tf.matMul(tf.softmax(scores), vh); // [n, Hq, qLen, D]
    outs.push(tf.reshape(tf.transpose(out, [0, 2, 1, 3]), [n * qLen, hq, d]));
    done += n * qLen;
  }
  const all = outs.length === 1 ? outs[0]! : tf.concat(outs, 0);
  return tf.gather(all, back) as tf.Tensor3D;
}

/**
 * An attention kernel with the signature `@rl2/models` takes as `attention`
 * (`q [1, Tl, Hq, D]`, `k`/`v [1, Hkv, Tl, D]`, mask ignored -> `[Tl, Hq*D]`) that runs
 * {@link contextParallelAttention} for one zigzag-split packed row. The model's own mask only
 * covers local tokens, so the kernel builds the causal mask from the plan instead; feed the
 * model the row's `zigzagSplit` token ids and position ids. `tiled`: see
 * {@link contextParallelAttention}.
 */
export function contextParallelAttentionKernel(
  plan: ZigzagPlan,
  cp: ProcessGroup,
  tiled?: TiledAttention,
) {
  return (q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, _mask?: tf.Tensor3D): tf.Tensor2D => {
    if (q.shape[0] !== 1)
      throw new ParallelError(
        'LAYOUT',
        `context parallelism takes one packed row per micro-batch (batch ${q.shape[0]}); pack sequences into one row.`,
      );
    const [, tl, hq, d] = q.shape;
    const toTokens = (x: tf.Tensor4D) => tf.transpose(tf.squeeze(x, [0]), [1, 0, 2]) as tf.Tensor3D; // [Hkv, Tl, D] -> [Tl, Hkv, D]
    const out = contextParallelAttention(
      tf.squeeze(q, [0]) as tf.Tensor3D,
      toTokens(k),
      toTokens(v),
      plan,
      cp,
      tiled,
    );
    return tf.reshape(out, [tl, hq * d]) as tf.Tensor2D;
  };
}
