import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { unaryCustomGrad, valuesOf } from './custom-grad.js';

// Sequence parallelism (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, §4.2.2):
// outside the tensor-parallel regions (norms, residuals) the tp ranks split the tokens instead of
// repeating them. Entering a region all-gathers the tokens (backward: reduce-scatter); leaving it
// reduce-scatters the partial sums (backward: all-gather), replacing f / g of plain TP.
// Parameters used on split tokens (norm weights, a row-parallel bias) get partial gradients on
// each tp rank: sum them over tp before the optimizer step.

/** `[T/tp, ...]` token shard -> `[T, ...]`, rank-major (contiguous token blocks per tp rank). */
export function gatherSequence<T extends tf.Tensor>(x: T, tp: ProcessGroup): T {
  if (tp.size === 1) return x;
  const op = unaryCustomGrad((input) => ({
    value: tf.tensor(tp.allGather(valuesOf(input)), [
      input.shape[0]! * tp.size,
      ...input.shape.slice(1),
    ]),
    gradFunc: (dy) => tf.tensor(tp.reduceScatter(valuesOf(dy), 'sum'), input.shape),
  }));
  return op(x) as T;
}

/** Partial sums `[T, ...]` -> this rank's `[T/tp, ...]` block of their sum over tp. */
export function reduceScatterSequence<T extends tf.Tensor>(x: T, tp: ProcessGroup): T {
  if (tp.size === 1) return x;
  const t = x.shape[0]!;
  if (t % tp.size !== 0)
    throw new ParallelError(
      'LAYOUT',
      `sequence parallelism: ${t} tokens do not split over tp=${tp.size}; pad the packed row to a multiple of tp.`,
    );
  const op = unaryCustomGrad((input) => {
    const shape = [t / tp.size, ...input.shape.slice(1)];
    return {
      value: tf.tensor(tp.reduceScatter(valuesOf(input), 'sum'), shape),
      gradFunc: (dy) => tf.tensor(tp.allGather(valuesOf(dy)), input.shape),
    };
  });
  return op(x) as T;
}

/** This tp rank's contiguous token block of a `[T, ...]` tensor (to enter sequence-parallel form). */
export function splitSequence<T extends tf.Tensor>(
  x: T,
  tp: Pick<ProcessGroup, 'rank' | 'size'>,
): T {
  const t = x.shape[0]!;
  if (t % tp.size !== 0)
    throw new ParallelError(
      'LAYOUT',
      `sequence parallelism: ${t} tokens do not split over tp=${tp.size}; pad the packed row to a multiple of tp.`,
    );
  const n = t / tp.size;
  return tf.slice(
    x,
    [tp.rank * n, ...x.shape.slice(1).map(() => 0)],
    [n, ...x.shape.slice(1)],
  ) as T;
}
