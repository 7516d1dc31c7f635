import { readsSynchronously } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { TrainersError } from '../errors.js';
import type { NamedGrads } from '../optim/clip-grad-norm.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import type { StepOutcome } from './gradient-step.js';
import type { StepTotals } from '../bins/pack-bins.js';

/** Metric slots reserved in the reduced buffer (a rank without bins knows no metric names). */
const MAX_REDUCED_METRICS = 32;

/** Sums a step's counts over the ranks: the global totals every loss divides by. */
export function sumTotalsOverRanks(dp: DataParallel, local: StepTotals): StepTotals {
  if (dp.size === 1) return local;
  // integers below 2^24 are exact in float32: far above any step's token count
  const [actionTokens, sequences, pairs, tokens] = dp.allReduceSum(
    Float32Array.of(local.actionTokens, local.sequences, local.pairs, local.tokens),
  );
  return {
    actionTokens: actionTokens as number,
    sequences: sequences as number,
    pairs: pairs as number,
    tokens: tokens as number,
  };
}

/**
 * Sums loss, metrics, `flags` and (if given) gradients over the ranks in one all-reduce.
 * Every rank's shares are already divided by the global totals, so the sums are the global
 * means and the summed gradient is that of the global mean loss (RL2's data-parallel scaling).
 * Gradients are laid out in `params` order (the same on every rank); a rank that had no bins
 * contributes zeros; a parameter gets a summed gradient when any rank had one. Metric names are
 * sorted; a rank without bins knows none and contributes
 * zeros (rank 0 always holds the heaviest bin, so it knows them). Input gradients are disposed
 * and replaced when dp.size > 1.
 */
export async function sumStepOverRanks(
  dp: DataParallel,
  outcome: StepOutcome & { grads?: NamedGrads },
  flags: readonly number[] = [],
  params?: Readonly<Record<string, tf.Variable>>,
): Promise<StepOutcome & { grads?: NamedGrads; flags: number[] }> {
  if (dp.size === 1) return { ...outcome, flags: [...flags] };
  const keys = Object.keys(outcome.metrics).sort();
  if (keys.length > MAX_REDUCED_METRICS) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `the objective reports ${keys.length} metrics; data parallelism sums at most ${MAX_REDUCED_METRICS} (${keys.join(', ')})`,
    );
  }
  const names = params ? Object.keys(params) : [];
  const sizes = names.map((n) => (params as Record<string, tf.Variable>)[n].size);
  const gradLength = sizes.reduce((a, b) => a + b, 0);
  // [gradients | one presence count per parameter | loss | flags | metric slots]
  const buf = new Float32Array(gradLength + names.length + 1 + flags.length + MAX_REDUCED_METRICS);
  let at = 0;
  // each gradient copied into the host buffer the collective sends (asynchronously off the CPU)
  for (const [i, n] of names.entries()) {
    const g = outcome.grads?.[n];
    if (g) {
      buf.set((readsSynchronously() ? g.dataSync() : await g.data()) as Float32Array, at);
      buf[gradLength + i] = 1;
    }
    at += sizes[i];
  }
  const offset = gradLength + names.length;
  buf[offset] = outcome.loss;
  buf.set(flags, offset + 1);
  keys.forEach((k, i) => {
    buf[offset + 1 + flags.length + i] = outcome.metrics[k];
  });
  const sum = dp.allReduceSum(buf);
  let grads: NamedGrads | undefined;
  if (params) {
    if (outcome.grads) tf.dispose(Object.values(outcome.grads));
    const out: NamedGrads = {};
    at = 0;
    names.forEach((n, i) => {
      // only parameters some rank has a gradient for, as on one process (AdamW would decay the others)
      if ((sum[gradLength + i] as number) > 0)
        out[n] = tf.tensor(sum.slice(at, at + sizes[i]), params[n].shape, 'float32');
      at += sizes[i];
    });
    grads = out;
  }
  const metrics = Object.fromEntries(
    keys.map((k, i) => [k, sum[offset + 1 + flags.length + i] as number]),
  );
  return {
    loss: sum[offset] as number,
    metrics,
    grads,
    flags: Array.from(sum.subarray(offset + 1, offset + 1 + flags.length)),
  };
}
