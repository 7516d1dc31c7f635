import type { LoraModel } from '@rl2/models';
import type { TrainingSequence } from '@rl2/rollout';
import { updateDropoutSeed, withLoraDropout } from '../lora/lora-objective.js';
import { stepTotals } from '../bins/pack-bins.js';
import type { AdamW, AdamWState } from '../optim/adamw.js';
import { type SectionOptimizer, sectionOptimizer } from '../optim/section-optimizer.js';
import { type RankLayout, microBatchBudget } from '../parallel-model/rank-layout.js';
import { type TrainedModel, checkpointOptimizerState } from '../parallel-model/trained-model.js';
import { layoutStep } from '../step/layout-step.js';
import type { Objective } from '../step/objective.js';
import { sumTotalsOverRanks } from '../step/sum-over-ranks.js';
import {
  type PerSequence,
  gatherPerSequence,
  rolloutLogps,
  rolloutValues,
} from './forward-passes.js';
import type { PpoConfig } from './ppo-config.js';
import { packRolloutBins } from './rollout-bins.js';

/** One model's update on a rollout: what it did, averaged over its optimizer steps. */
export interface UpdateOutcome {
  readonly loss: number;
  readonly gradNorm: number;
  readonly metrics: Record<string, number>;
  /** Tokens trained on (summed over the ranks) and the seconds it took. */
  readonly tokens: number;
  readonly seconds: number;
  /** Learning rate of the last optimizer step. */
  readonly lr: number;
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

/** What a worker takes from its model section (`actor.*`, `critic.*`): see `ppoWorkerOptions`. */
export interface PpoWorkerOptions {
  /** Tokens per micro-batch (`cp_size * tp_size * max_length_per_device`) and the key that sets them. */
  readonly budget: { readonly budget: number; readonly budgetKey: string };
  /** update_per_rollout: optimizer steps per rollout. */
  readonly updatesPerRollout: number;
  /** max_grad_norm: the clip of the global gradient norm (null: no clipping). */
  readonly maxGradNorm: number | null;
  /** The optimizer and its learning rate per step; none for the frozen reference. */
  readonly optim?: SectionOptimizer;
  /**
   * `<key>.lora.dropout` > 0: the adapters whose inputs drop out in the update's passes (keyed by
   * `seed`, the optimizer step and the micro-batch's tokens), never in computeLogps/computeValues.
   */
  readonly loraDropout?: { readonly lora: LoraModel; readonly seed: number };
}

/**
 * A worker's options from its section: the micro-batch budget, update_per_rollout, max_grad_norm
 * and, with `totalUpdates` (the optimizer steps of the whole run, its schedule's length), the
 * optimizer over `trained`'s params; a frozen model (the reference) gets none.
 */
export function ppoWorkerOptions(
  section: PpoConfig['actor'] | PpoConfig['critic'],
  key: 'actor' | 'critic',
  trained: TrainedModel,
  totalUpdates?: number,
  loraDropout?: PpoWorkerOptions['loraDropout'],
): PpoWorkerOptions {
  return {
    budget: microBatchBudget(section, key),
    updatesPerRollout: section.update_per_rollout,
    maxGradNorm: section.max_grad_norm,
    ...(totalUpdates === undefined
      ? {}
      : { optim: sectionOptimizer(section, trained.params, totalUpdates) }),
    ...(loraDropout?.lora.dropout ? { loraDropout } : {}),
  };
}

/**
 * A model of a PPO run as one of RL2's workers holds it: laid out on the ranks by its section's
 * tp/cp/ddp sizes, with its optimizer and learning rate when it trains (not the reference).
 * Every rank holds the whole rollout; each data-parallel rank passes and trains on its slice of
 * the balanced bins (tp / cp ranks of one slot together) and the results are gathered or summed,
 * so every rank ends a call with the same values and takes the same optimizer step.
 */
export class PpoWorker {
  constructor(
    readonly trained: TrainedModel,
    readonly layout: RankLayout,
    private readonly options: PpoWorkerOptions,
  ) {}

  get optimizer(): AdamW | undefined {
    return this.options.optim?.optimizer;
  }

  /** log pi of every rollout token at `temperature`, no gradient (RL2's compute_logps). */
  async computeLogps(
    sequences: readonly TrainingSequence[],
    temperature: number,
  ): Promise<PerSequence> {
    const bins = this.bins(
      sequences,
      sequences.map((_, i) => i),
    );
    return gatherPerSequence(
      this.layout.data,
      await rolloutLogps(this.trained.model, bins, sequences, temperature),
      sequences,
    );
  }

  /** The critic's value of every rollout token, no gradient (RL2's compute_values). */
  async computeValues(sequences: readonly TrainingSequence[]): Promise<PerSequence> {
    const bins = this.bins(
      sequences,
      sequences.map((_, i) => i),
    );
    return gatherPerSequence(
      this.layout.data,
      await rolloutValues(this.trained.model, bins, sequences),
      sequences,
    );
  }

  /**
   * RL2's ppo_update: update_per_rollout optimizer steps on contiguous chunks of the rollout,
   * each as the SFT loop takes one (`layoutStep`): balanced packing into micro-batches, gradient
   * accumulation with the loss divided by the chunk's global totals, clipping by the global
   * norm, AdamW. `firstUpdate` numbers the first step on the learning-rate schedule (and
   * keys the LoRA dropout masks, see `loraDropout`).
   */
  async update(
    sequences: readonly TrainingSequence[],
    objective: Objective,
    firstUpdate: number,
  ): Promise<UpdateOutcome> {
    const { optim, updatesPerRollout, maxGradNorm, loraDropout } = this.options;
    const { optimizer, lrAt } = optim as SectionOptimizer;
    const { layout, trained } = this;
    const began = performance.now();
    const chunks = contiguousChunks(sequences.length, updatesPerRollout);
    const metrics: Record<string, number> = {};
    let loss = 0;
    let gradNorm = 0;
    let tokens = 0;
    for (const [c, chunk] of chunks.entries()) {
      const bins = this.bins(sequences, chunk);
      const totals = sumTotalsOverRanks(layout.data, stepTotals(bins));
      tokens += totals.tokens;
      const lr = lrAt(firstUpdate + c);
      const res = await layoutStep({
        layout,
        bins,
        totals,
        objective: loraDropout
          ? withLoraDropout(
              objective,
              loraDropout.lora,
              updateDropoutSeed(loraDropout.seed, firstUpdate + c),
            )
          : objective,
        trained,
        optimizer,
        lr,
        maxGradNorm,
      });
      loss += res.loss / chunks.length;
      gradNorm += res.gradNorm / chunks.length;
      for (const [k, v] of Object.entries(res.metrics))
        metrics[k] = (metrics[k] ?? 0) + v / chunks.length;
    }
    const lr = lrAt(firstUpdate + updatesPerRollout - 1);
    return { loss, gradNorm, metrics, tokens, seconds: (performance.now() - began) / 1000, lr };
  }

  /** The optimizer state as a checkpoint holds it, on world rank 0 (a collective under tp or ZeRO-3). */
  async checkpointState(isMain: boolean): Promise<AdamWState | undefined> {
    return this.optimizer
      ? checkpointOptimizerState(this.trained, this.optimizer, this.layout, isMain)
      : undefined;
  }

  dispose(): void {
    this.optimizer?.dispose();
    this.trained.dispose();
  }

  /** This rank's bins of the sequences `indices` (ZeRO-3 ranks keep in step with idle bins). */
  private bins(sequences: readonly TrainingSequence[], indices: readonly number[]) {
    return packRolloutBins(
      sequences,
      indices,
      this.options.budget.budget,
      this.options.budget.budgetKey,
      this.layout.data,
      this.trained.sharded,
    );
  }
}
