import type { TrainingSequence } from '@rl2/rollout';
import type * as tf from '@tensorflow/tfjs-core';
import { accumulateGradients } from '../loop/gradient-step.js';
import type { Objective } from '../loop/objective.js';
import { stepTotals } from '../loop/pack-bins.js';
import type { AdamW } from '../optim/adamw.js';
import { clipGradNorm } from '../optim/clip-grad-norm.js';
import { packRolloutBins } from './rollout-bins.js';

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
 */
export function updateModel(opts: {
  sequences: readonly TrainingSequence[];
  updatePerRollout: number;
  budget: number;
  budgetKey: string;
  objective: Objective;
  params: Readonly<Record<string, tf.Variable>>;
  optimizer: AdamW;
  maxGradNorm: number | null;
  lr: (update: number) => number;
}): UpdateOutcome {
  const began = performance.now();
  const chunks = contiguousChunks(opts.sequences.length, opts.updatePerRollout);
  const metrics: Record<string, number> = {};
  let loss = 0;
  let gradNorm = 0;
  let tokens = 0;
  chunks.forEach((chunk, c) => {
    const bins = packRolloutBins(opts.sequences, chunk, opts.budget, opts.budgetKey);
    const totals = stepTotals(bins);
    tokens += totals.tokens;
    const res = accumulateGradients(bins, totals, opts.objective, opts.params);
    const { norm, grads } = clipGradNorm(res.grads, opts.maxGradNorm);
    for (const g of Object.values(res.grads)) g.dispose();
    opts.optimizer.step(grads, opts.lr(c));
    for (const g of Object.values(grads)) g.dispose();
    loss += res.loss / chunks.length;
    gradNorm += norm / chunks.length;
    for (const [k, v] of Object.entries(res.metrics)) metrics[k] = (metrics[k] ?? 0) + v / chunks.length;
  });
  return { loss, gradNorm, metrics, tokens, seconds: (performance.now() - began) / 1000 };
}
