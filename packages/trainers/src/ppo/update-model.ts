import type { TrainingSequence } from '@rl2/rollout';
import { layoutStep } from '../loop/layout-step.js';
import type { Objective } from '../loop/objective.js';
import { stepTotals } from '../loop/pack-bins.js';
import { sumTotalsOverRanks } from '../loop/sum-over-ranks.js';
import type { AdamW } from '../optim/adamw.js';
import { ONE_PROCESS, type RankLayout } from '../parallel-model/rank-layout.js';
import type { TrainedModel } from '../parallel-model/trained-model.js';
import { packRolloutBins } from './rollout-bins.js';

/** A PPO model's optimizer (over `TrainedModel.params`: full tensors, tp shards or ZeRO-3 shards). */
export type PpoOptimizer = AdamW;

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
 * With several ranks every rank holds the whole rollout and its data-parallel rank trains on its
 * slice of the chunk's bins (tp / cp ranks of one slot together); each step is `layoutStep`,
 * the SFT loop's, so every rank takes the same step.
 */
export function updateModel(opts: {
  sequences: readonly TrainingSequence[];
  updatePerRollout: number;
  budget: number;
  budgetKey: string;
  objective: Objective;
  trained: TrainedModel;
  optimizer: PpoOptimizer;
  maxGradNorm: number | null;
  lr: (update: number) => number;
  layout?: RankLayout;
}): UpdateOutcome {
  const layout = opts.layout ?? ONE_PROCESS;
  const began = performance.now();
  const chunks = contiguousChunks(opts.sequences.length, opts.updatePerRollout);
  const metrics: Record<string, number> = {};
  let loss = 0;
  let gradNorm = 0;
  let tokens = 0;
  chunks.forEach((chunk, c) => {
    const bins = packRolloutBins(opts.sequences, chunk, opts.budget, opts.budgetKey, layout.data, opts.trained.sharded);
    const totals = sumTotalsOverRanks(layout.data, stepTotals(bins));
    tokens += totals.tokens;
    const res = layoutStep({ layout, bins, totals, objective: opts.objective, trained: opts.trained, optimizer: opts.optimizer, lr: opts.lr(c), maxGradNorm: opts.maxGradNorm });
    loss += res.loss / chunks.length;
    gradNorm += res.gradNorm / chunks.length;
    for (const [k, v] of Object.entries(res.metrics)) metrics[k] = (metrics[k] ?? 0) + v / chunks.length;
  });
  return { loss, gradNorm, metrics, tokens, seconds: (performance.now() - began) / 1000 };
}
