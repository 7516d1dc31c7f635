import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { unaryCustomGrad, valuesOf } from './custom-grad.js';
import type { ZigzagPlan } from './zigzag.js';

/** Take this cp rank's tokens (axis 0) of a tensor over the whole packed row. */
export function zigzagSplit<T extends tf.Tensor>(row: T, plan: ZigzagPlan, cpRank: number): T {
  if (row.shape[0] !== plan.length) throw new ParallelError('LAYOUT', `zigzagSplit: axis 0 has ${row.shape[0]} tokens but the plan's row has ${plan.length}.`);
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
export function allGatherContext<T extends tf.Tensor>(local: T, plan: ZigzagPlan, cp: ProcessGroup, backward: 'sum' | 'own'): T {
  if (cp.size === 1) return local;
  const op = unaryCustomGrad((x) => ({
    value: tf.tensor(cp.allGather(valuesOf(x)), [x.shape[0]! * cp.size, ...x.shape.slice(1)]),
    gradFunc: (dy) => {
      if (backward === 'own') return tf.slice(dy, [cp.rank * x.shape[0]!, ...x.shape.slice(1).map(() => 0)], x.shape);
      return tf.tensor(cp.reduceScatter(valuesOf(dy), 'sum'), x.shape);
    },
  }));
  return zigzagMerge(op(local), plan) as T;
}

/**
 * Causal attention of this cp rank's queries over the whole packed row ("Llama context
 * parallelism", https://arxiv.org/abs/2407.21783 §3.3.2: K/V all-gathered, each rank attends
 * for its own queries). Tokens attend within their own sequence to positions <= their own, so
 * each sequence is computed on its own (its local queries against its keys): the work is the
 * sum of the sequences' squares, not the square of the packed row.
 * `q [Tl, Hq, D]`, `k`/`v [Tl, Hkv, D]` on this rank's zigzag tokens; GQA when Hq > Hkv.
 * Returns `[Tl, Hq, D]`; gradients to K/V flow back to their owners by reduce-scatter.
 */
export function contextParallelAttention(q: tf.Tensor3D, k: tf.Tensor3D, v: tf.Tensor3D, plan: ZigzagPlan, cp: ProcessGroup): tf.Tensor3D {
  const [tl, hq, d] = q.shape;
  const hkv = k.shape[1];
  if (hq % hkv !== 0) throw new ParallelError('LAYOUT', `query heads ${hq} are not a multiple of kv heads ${hkv}.`);
  const mine = plan.indices[cp.rank]!;
  if (mine.length !== tl) throw new ParallelError('LAYOUT', `cp rank ${cp.rank} holds ${mine.length} tokens in the plan but q has ${tl}.`);
  const kAll = allGatherContext(k, plan, cp, 'sum'); // [T, Hkv, D] in row order
  const vAll = allGatherContext(v, plan, cp, 'sum');
  const rep = hq / hkv;
  const outs: tf.Tensor3D[] = [];
  // a rank's tokens of one sequence are consecutive in its local order (both zigzag chunks)
  for (let i = 0; i < tl; ) {
    const seg = plan.segments[mine[i]!]!;
    let j = i;
    while (j < tl && plan.segments[mine[j]!] === seg) j++;
    const start = mine[i]! - plan.positions[mine[i]!]!;
    let len = 0;
    while (start + len < plan.length && plan.segments[start + len] === seg) len++;
    // additive mask [ls, L]: 0 for keys at or before the query's position in the sequence
    const ls = j - i;
    const mask = new Float32Array(ls * len).fill(-1e30);
    for (let a = 0; a < ls; a++) mask.fill(0, a * len, a * len + plan.positions[mine[i + a]!]! + 1);
    const expand = (x: tf.Tensor) => (rep === 1 ? x : tf.reshape(tf.tile(tf.expandDims(x, 2), [1, 1, rep, 1]), [len, hq, d])); // repeat_interleave on heads
    const qh = tf.transpose(tf.slice(q, [i, 0, 0], [ls, hq, d]), [1, 0, 2]); // [Hq, ls, D]
    const kh = tf.transpose(expand(tf.slice(kAll, [start, 0, 0], [len, hkv, d])), [1, 0, 2]); // [Hq, L, D]
    const vh = tf.transpose(expand(tf.slice(vAll, [start, 0, 0], [len, hkv, d])), [1, 0, 2]);
    const scores = tf.add(tf.div(tf.matMul(qh, kh, false, true), Math.sqrt(d)), tf.tensor2d(mask, [ls, len]));
    outs.push(tf.transpose(tf.matMul(tf.softmax(scores), vh), [1, 0, 2]) as tf.Tensor3D); // [ls, Hq, D]
    i = j;
  }
  return (outs.length === 1 ? outs[0]! : tf.concat(outs, 0)) as tf.Tensor3D;
}

/**
 * An attention kernel with the signature `@rl2/models` takes as `attention`
 * (`q [1, Tl, Hq, D]`, `k`/`v [1, Hkv, Tl, D]`, mask ignored -> `[Tl, Hq*D]`) that runs
 * {@link contextParallelAttention} for one zigzag-split packed row. The model's own mask only
 * covers local tokens, so the kernel builds the causal mask from the plan instead; feed the
 * model the row's `zigzagSplit` token ids and position ids.
 */
export function contextParallelAttentionKernel(plan: ZigzagPlan, cp: ProcessGroup) {
  return (q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, _mask?: tf.Tensor3D): tf.Tensor2D => {
    if (q.shape[0] !== 1) throw new ParallelError('LAYOUT', `context parallelism takes one packed row per micro-batch (batch ${q.shape[0]}); pack sequences into one row.`);
    const [, tl, hq, d] = q.shape;
    const toTokens = (x: tf.Tensor4D) => tf.transpose(tf.squeeze(x, [0]), [1, 0, 2]) as tf.Tensor3D; // [Hkv, Tl, D] -> [Tl, Hkv, D]
    const out = contextParallelAttention(tf.squeeze(q, [0]) as tf.Tensor3D, toTokens(k), toTokens(v), plan, cp);
    return tf.reshape(out, [tl, hq * d]) as tf.Tensor2D;
  };
}
