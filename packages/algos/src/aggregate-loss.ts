import { type Scalar, type Tensor, mul, sum, tensor, tidy } from '@tensorflow/tfjs-core';
import { AlgosError } from './errors.js';
import { expectNumber, expectShape } from './internal/check.js';
import { hostValues } from './internal/host-values.js';
import { resolveSegments } from './internal/segments.js';
import type { GlobalTotals, TokenLayout } from './layout.js';

/**
 * How per-token losses become one scalar. Names follow verl's `loss_agg_mode`; RL2's
 * `avg_level=token` is `token-mean` and `avg_level=sequence` is `seq-mean-token-mean`.
 * Let m be the action mask, l the per-token loss, N the global action-token count, S the
 * global sequence count, and n_i the action count of sequence i:
 * - `token-mean`:              sum_i sum_t m l / N                  (DAPO, Dr. GRPO token level)
 * - `seq-mean-token-sum`:      sum_i (sum_t m l) / S
 * - `seq-mean-token-mean`:     sum_i (sum_t m l / n_i) / S          (original GRPO)
 * - `seq-mean-token-sum-norm`: sum_i (sum_t m l) / (S * normLength) (Dr. GRPO with a constant
 *   horizon, as TRL's `dr_grpo`: https://arxiv.org/abs/2503.20783)
 */
export type LossAggregation =
  | 'token-mean'
  | 'seq-mean-token-sum'
  | 'seq-mean-token-mean'
  | 'seq-mean-token-sum-norm';

/** Every valid `LossAggregation`, in documentation order. */
export const LOSS_AGGREGATIONS: readonly LossAggregation[] = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
];

/** Options shared by every loss that aggregates per-token values. */
export interface AggregationOptions {
  /** Aggregation mode (default `token-mean`, RL2's default `avg_level=token`). */
  readonly mode?: LossAggregation;
  /**
   * Global totals over the whole update (all micro-batches, all ranks). Default: this batch's own
   * counts (single micro-batch, single rank).
   */
  readonly totals?: GlobalTotals;
  /** Constant horizon for `seq-mean-token-sum-norm` (e.g. max_new_tokens). Default: T, the row length. */
  readonly normLength?: number;
}

/**
 * Counts the action tokens and the sequences having at least one action token in this batch.
 * Sum the result over all micro-batches and data-parallel ranks to get `GlobalTotals`.
 */
export function countTotals(layout: TokenLayout): GlobalTotals {
  const fn = 'countTotals';
  const seg = resolveSegments(layout, fn);
  const mask = hostValues(layout.actionMask, layout.host?.actionMask, 'actionMask', fn);
  const seen = new Uint8Array(seg.numSequences + 1);
  let actionTokens = 0;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i]! > 0) {
      actionTokens += 1;
      seen[seg.flatIds[i]!] = 1;
    }
  }
  let sequences = 0;
  for (let s = 0; s < seg.numSequences; s++) sequences += seen[s]!;
  return { actionTokens, sequences };
}

/**
 * Per-token weights `[B, T]` that turn any aggregation mode into a weighted sum:
 * aggregate(l) = sum_t w_t l_t, with w = m / N (token-mean), m / S (seq-mean-token-sum),
 * m / (n_i S) (seq-mean-token-mean) or m / (S normLength) (seq-mean-token-sum-norm). Compute
 * them once per micro-batch and reuse them for the loss and every metric; the gradient of
 * the aggregate with respect to l is exactly w. Zero counts give weight 0, never NaN.
 */
export function aggregationWeights(layout: TokenLayout, options: AggregationOptions = {}): Tensor {
  const fn = 'aggregationWeights';
  const mode = options.mode ?? 'token-mean';
  if (!LOSS_AGGREGATIONS.includes(mode)) {
    throw new AlgosError(
      'UNKNOWN_NAME',
      `${fn}: unknown aggregation mode "${mode}"; valid modes: ${LOSS_AGGREGATIONS.join(', ')}`,
    );
  }
  const totals = options.totals ?? countTotals(layout);
  expectNumber(totals.actionTokens, (v) => v >= 0, 'totals.actionTokens', fn, 'a count >= 0');
  expectNumber(totals.sequences, (v) => v >= 0, 'totals.sequences', fn, 'a count >= 0');
  const seg = resolveSegments(layout, fn);
  const mask = hostValues(layout.actionMask, layout.host?.actionMask, 'actionMask', fn);
  const w = new Float32Array(mask.length);
  const seqs = Math.max(totals.sequences, 1);
  if (mode === 'token-mean') {
    const n = Math.max(totals.actionTokens, 1);
    for (let i = 0; i < w.length; i++) w[i] = mask[i]! / n;
  } else if (mode === 'seq-mean-token-mean') {
    const counts = new Float64Array(seg.numSequences + 1);
    for (let i = 0; i < w.length; i++) counts[seg.flatIds[i]!]! += mask[i]!;
    for (let i = 0; i < w.length; i++)
      w[i] = mask[i]! / (Math.max(counts[seg.flatIds[i]!]!, 1) * seqs);
  } else {
    let denom = seqs;
    if (mode === 'seq-mean-token-sum-norm') {
      const norm = options.normLength ?? seg.cols;
      expectNumber(
        norm,
        (v) => v > 0,
        'normLength',
        fn,
        'a positive token count such as max_new_tokens',
      );
      denom *= norm;
    }
    for (let i = 0; i < w.length; i++) w[i] = mask[i]! / denom;
  }
  return tensor(w, layout.actionMask.shape);
}

/**
 * Aggregates per-token values `[B, T]` into this batch's contribution to the global mean.
 * Summing the returned scalars over all micro-batches and ranks gives exactly the global
 * aggregate; when your collective AVERAGES gradients over W ranks, multiply by W.
 * Masked-out tokens are ignored; an all-zero mask or zero totals give 0, never NaN.
 * Sequence modes need each sequence whole inside one call (packing never splits one).
 * To aggregate several quantities over one batch, compute `aggregationWeights` once and take
 * sum(values * weights) yourself.
 */
export function aggregateLoss(
  values: Tensor,
  layout: TokenLayout,
  options: AggregationOptions = {},
): Scalar {
  expectShape(values, layout.actionMask.shape, 'values', 'aggregateLoss');
  const weights = aggregationWeights(layout, options);
  const out = tidy(() => sum(mul(values, weights)) as Scalar);
  weights.dispose();
  return out;
}
