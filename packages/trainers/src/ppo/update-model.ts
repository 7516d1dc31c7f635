import type { TrainingSequence } from '@rl2/rollout';
import * as tf from '@tensorflow/tfjs-core';
import { type DataParallel, SINGLE_PROCESS } from '../loop/data-parallel.js';
import { accumulateGradients } from '../loop/gradient-step.js';
import type { Objective } from '../loop/objective.js';
import { stepTotals } from '../loop/pack-bins.js';
import { sumStepOverRanks, sumTotalsOverRanks } from '../loop/sum-over-ranks.js';
import type { AdamW } from '../optim/adamw.js';
import { clipGradNorm } from '../optim/clip-grad-norm.js';
import { ShardedAdamW } from '../optim/sharded-adamw.js';
import { packRolloutBins } from './rollout-bins.js';

/** A PPO model's optimizer: AdamW, or its FSDP form when `<model>.ddp_size` is set on several ranks. */
export type PpoOptimizer = AdamW | ShardedAdamW;

/** One model's update on a rollout: what it did, averaged over its optimizer steps. */
export interface UpdateOutcome {
  readonly loss: number;
  readonly gradNorm: number;
  readonly metrics: Record<string, number>;
  readonly tokens: number;
  readonly seconds: number;
}

/** Splits 0..n-1 into `k` contiguous chunks (RL2's update_per_rollout); never an empty chunk. */
export function contiguousChunks(n: number, k: number): number[][] {
  const parts = Math.max(1, Math.min(k, n));
  return Array.from({ length: parts }, (_, c) => {
    const from = Math.floor((c * n) / parts);
    const to = Math.floor(((c + 1) * n) / parts);
    return Array.from({ length: to - from }, (_, i) => from + i);
  });
}

/**
 * `updatePerRollout` optimizer steps on contiguous chunks of the rollout, each as the SFT loop
 * does one step: balanced packing into micro-batches, gradient accumulation with the loss
 * divided by the chunk's global totals, clipping by the global norm, AdamW at `lr(i)`.
 * With data parallelism every rank holds the whole rollout and trains on its slice of the
 * chunk's bins; totals, loss, metrics and gradients are summed over the ranks (the SFT loop's
 * scheme), so every rank takes the same step. A `ShardedAdamW` reduce-scatters the gradients itself.
 */
export function updateModel(opts: {
  sequences: readonly TrainingSequence[];
  updatePerRollout: number;
  budget: number;
  budgetKey: string;
  objective: Objective;
  params: Readonly<Record<string, tf.Variable>>;
  optimizer: PpoOptimizer;
  maxGradNorm: number | null;
  lr: (update: number) => number;
  dp?: DataParallel;
}): UpdateOutcome {
  const dp = opts.dp ?? SINGLE_PROCESS;
  const began = performance.now();
  const chunks = contiguousChunks(opts.sequences.length, opts.updatePerRollout);
  const metrics: Record<string, number> = {};
  let loss = 0;
  let gradNorm = 0;
  let tokens = 0;
  chunks.forEach((chunk, c) => {
    const bins = packRolloutBins(opts.sequences, chunk, opts.budget, opts.budgetKey, dp);
    const totals = sumTotalsOverRanks(dp, stepTotals(bins));
    tokens += totals.tokens;
    const local = accumulateGradients(bins, totals, opts.objective, opts.params);
    let res: { loss: number; metrics: Record<string, number> };
    let norm: number;
    if (opts.optimizer instanceof ShardedAdamW) {
      res = sumStepOverRanks(dp, { loss: local.loss, metrics: local.metrics });
      norm = opts.optimizer.step(local.grads, opts.lr(c), opts.maxGradNorm);
      tf.dispose(Object.values(local.grads));
    } else {
      const summed = sumStepOverRanks(dp, local, [], dp.size > 1 ? opts.params : undefined);
      res = summed;
      const grads = summed.grads ?? local.grads;
      const clipped = clipGradNorm(grads, opts.maxGradNorm);
      norm = clipped.norm;
      tf.dispose(Object.values(grads));
      opts.optimizer.step(clipped.grads, opts.lr(c));
      tf.dispose(Object.values(clipped.grads));
    }
    loss += res.loss / chunks.length;
    gradNorm += norm / chunks.length;
    for (const [k, v] of Object.entries(res.metrics)) metrics[k] = (metrics[k] ?? 0) + v / chunks.length;
  });
  return { loss, gradNorm, metrics, tokens, seconds: (performance.now() - began) / 1000 };
}
