import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { unaryCustomGrad, valuesOf } from './custom-grad.js';
import { gatherSequence, reduceScatterSequence } from './sequence-parallel.js';

// Megatron-LM tensor parallelism (Shoeybi et al. 2019, https://arxiv.org/abs/1909.08053, §3):
// the conjugate operators f (identity forward, all-reduce backward) and g (all-reduce forward,
// identity backward) make a column-parallel linear followed by a row-parallel linear equal the
// unsharded pair in value and gradient, with one all-reduce each way. The all-reduces block
// (ProcessGroup), so they run inside tfjs's synchronous gradient functions; on webgpu their
// inputs are read there by waiting for the device (`valuesOf`).

/** f: identity forward; backward sums the input gradient over the tp group. */
export function copyToTensorParallel<T extends tf.Tensor>(x: T, tp: ProcessGroup): T {
  if (tp.size === 1) return x;
  const op = unaryCustomGrad((input) => ({
    value: input.clone(),
    gradFunc: (dy) => tf.tensor(tp.allReduce(valuesOf(dy), 'sum'), dy.shape),
  }));
  return op(x) as T;
}

/** g: forward sums partial results over the tp group; backward passes the gradient through. */
export function reduceFromTensorParallel<T extends tf.Tensor>(x: T, tp: ProcessGroup): T {
  if (tp.size === 1) return x;
  const op = unaryCustomGrad((input) => ({
    value: tf.tensor(tp.allReduce(valuesOf(input), 'sum'), input.shape),
    gradFunc: (dy) => dy.clone(),
  }));
  return op(x) as T;
}

/** Rows [start, end) of a dimension of size `n` owned by tp rank `rank`; n must divide evenly. */
export function shardRange(n: number, rank: number, size: number, what: string): [number, number] {
  if (n % size !== 0)
    throw new ParallelError(
      'LAYOUT',
      `${what}=${n} is not divisible by tp=${size}; choose a tp that divides it.`,
    );
  const c = n / size;
  return [rank * c, (rank + 1) * c];
}

/**
 * This rank's part of an HF linear weight `w [out, in]` (and bias `[out]`):
 * `column` splits out (q/k/v, gate/up; bias split too), `row` splits in (o_proj, down_proj;
 * the bias stays whole and is added once after the reduction).
 */
export function shardLinear(
  w: tf.Tensor2D,
  kind: 'column' | 'row',
  tp: Pick<ProcessGroup, 'rank' | 'size'>,
  bias?: tf.Tensor1D,
): { weight: tf.Tensor2D; bias?: tf.Tensor1D } {
  const [out, inp] = w.shape;
  if (kind === 'column') {
    const [a, b] = shardRange(out, tp.rank, tp.size, 'output features of a column-parallel linear');
    return {
      weight: tf.slice(w, [a, 0], [b - a, inp]),
      bias: bias && tf.slice(bias, [a], [b - a]),
    };
  }
  const [a, b] = shardRange(inp, tp.rank, tp.size, 'input features of a row-parallel linear');
  return { weight: tf.slice(w, [0, a], [out, b - a]), bias };
}

/** Options of the parallel linears. */
export interface ParallelLinearOptions {
  /** Tokens are split over tp outside the layer (sequence parallelism): gather in / reduce-scatter out. */
  sequenceParallel?: boolean;
}

/**
 * Column-parallel linear: `x [.., in]` (replicated; with sequenceParallel this rank's
 * `[T/tp, in]` tokens) -> this rank's `[.., out/tp]` slice of x W^T + b (all tokens).
 */
export function columnParallelLinear(
  x: tf.Tensor,
  weightShard: tf.Tensor2D /* [out/tp, in] */,
  biasShard: tf.Tensor1D | undefined,
  tp: ProcessGroup,
  options: ParallelLinearOptions = {},
): tf.Tensor {
  const y = linear(
    options.sequenceParallel ? gatherSequence(x, tp) : copyToTensorParallel(x, tp),
    weightShard,
  );
  return biasShard ? tf.add(y, biasShard) : y;
}

/**
 * Row-parallel linear: `x [.., in/tp]` (this rank's slice) -> the full `[.., out]` x W^T + b,
 * replicated; with sequenceParallel, this rank's `[T/tp, out]` tokens (x must be 2D then).
 */
export function rowParallelLinear(
  xShard: tf.Tensor,
  weightShard: tf.Tensor2D /* [out, in/tp] */,
  bias: tf.Tensor1D | undefined,
  tp: ProcessGroup,
  options: ParallelLinearOptions = {},
): tf.Tensor {
  const partial = linear(xShard, weightShard);
  const y = options.sequenceParallel
    ? reduceScatterSequence(partial, tp)
    : reduceFromTensorParallel(partial, tp);
  return bias ? tf.add(y, bias) : y;
}

function linear(x: tf.Tensor, w: tf.Tensor2D): tf.Tensor {
  const inp = x.shape[x.shape.length - 1]!;
  const flat = tf.reshape(x, [-1, inp]);
  const y = tf.matMul(flat, w, false, true);
  return tf.reshape(y, [...x.shape.slice(0, -1), w.shape[0]]);
}

/**
 * Attention heads under tp: q heads and kv heads are split over the tp ranks, so both must
 * divide by tp (Megatron keeps each kv head with its query group). Returns heads per rank.
 */
export function tensorParallelHeads(
  numHeads: number,
  numKvHeads: number,
  tp: number,
): { heads: number; kvHeads: number } {
  if (numHeads % tp !== 0)
    throw new ParallelError(
      'LAYOUT',
      `num_attention_heads=${numHeads} is not divisible by tp=${tp}; choose a tp that divides it.`,
    );
  if (numKvHeads % tp !== 0) {
    throw new ParallelError(
      'LAYOUT',
      `num_key_value_heads=${numKvHeads} is not divisible by tp=${tp} (kv_heads % tp must be ` +
        `0); use tp in {${divisors(numKvHeads).join(', ')}}.`,
    );
  }
  return { heads: numHeads / tp, kvHeads: numKvHeads / tp };
}

/** The sizes of a decoder that tensor parallelism splits (HF config.json's, as read). */
export interface TensorParallelSizes {
  numHeads: number;
  numKvHeads: number;
  intermediateSize: number;
  vocabSize: number;
}

/**
 * Checks that tp splits a decoder: q and kv heads (see `tensorParallelHeads`), the MLP width
 * (gate/up column-parallel, down row-parallel) and the vocabulary (embedding and LM head split
 * by rows). Throws a `LAYOUT` error naming the config.json key and what to choose.
 */
export function checkTensorParallelSizes(sizes: TensorParallelSizes, tp: number): void {
  tensorParallelHeads(sizes.numHeads, sizes.numKvHeads, tp);
  for (const [key, size] of [
    ['intermediate_size', sizes.intermediateSize],
    ['vocab_size', sizes.vocabSize],
  ] as const) {
    if (size % tp !== 0)
      throw new ParallelError(
        'LAYOUT',
        `the model's ${key}=${size} is not divisible by tp=${tp}` +
          `${key === 'vocab_size' ? ' (pad the embedding to a multiple of tp)' : ''}; ` +
          `choose a tp that divides it.`,
      );
  }
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}
