import { freeDisposedBuffers } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import type { AdamW } from '../optim/adamw.js';
import { clipCoefficient } from '../optim/clip-grad-norm.js';
import type { RankLayout } from '../parallel-model/rank-layout.js';
import { reduceTensorParallelPartials } from '../parallel-model/tensor-parallel-decoder.js';
import type { TrainedModel } from '../parallel-model/trained-model.js';
import { accumulateGradients } from './gradient-step.js';
import type { Objective } from './objective.js';
import type { PackedBin, StepTotals } from '../bins/pack-bins.js';
import { sumStepOverRanks } from './sum-over-ranks.js';

/** What one optimizer step did. */
export interface LayoutStepResult {
  readonly loss: number;
  readonly metrics: Record<string, number>;
  readonly gradNorm: number;
  readonly flags: number[];
  /** False when the loss or the gradient norm was NaN/Inf: the weights and moments were left as they were. */
  readonly applied: boolean;
}

const zeroed = (m: Record<string, number>) => Object.fromEntries(Object.keys(m).map((k) => [k, 0]));

/**
 * One optimizer step on this rank's bins (`totals` already summed over `layout.data`), as the
 * SFT/RM/DPO loop and the PPO updates take it: gradients accumulated over the bins (each share
 * divided by the global totals), then
 * - whole or tp-sharded parameters: tp-partial gradients summed over tp, one all-reduce over
 *   `layout.replicas` of gradients, loss, metrics and `flags` (the first cp rank of each data
 *   slot adds the loss and metrics);
 * - ZeRO-3 shards: the backward already reduce-scattered the gradients; loss and metrics are
 *   summed over `layout.data`;
 * then clipping by the true global norm and AdamW, unless the loss or the norm is not finite
 * (the update is then dropped, see `applied`; `trainer.on_nonfinite` decides what follows). `flags` (e.g. "stop requested") come back
 * summed over the whole world. Every rank calls it.
 */
export async function layoutStep<P>(o: {
  layout: RankLayout;
  bins: readonly PackedBin[];
  totals: StepTotals;
  objective: Objective<P>;
  trained: TrainedModel;
  optimizer: AdamW;
  lr: number;
  maxGradNorm: number | null;
  flags?: readonly number[];
}): Promise<LayoutStepResult> {
  const { layout, trained } = o;
  await trained.ready();
  const local = await accumulateGradients(o.bins, o.totals, o.objective, trained.params);
  local.grads = await trained.settleGrads(local.grads);
  let flags = [...(o.flags ?? [])];
  // the reductions below span part of the world under tp or cp: the flags go round all of it
  if (flags.length > 0 && layout.world.size > Math.min(layout.replicas.size, layout.data.size))
    flags = Array.from(layout.world.allReduceSum(Float32Array.from(flags)));
  let res: Awaited<ReturnType<typeof sumStepOverRanks>>;
  if (trained.sharded) {
    res = {
      ...(await sumStepOverRanks(layout.data, { loss: local.loss, metrics: local.metrics }, flags)),
      grads: local.grads,
    };
  } else {
    reduceTensorParallelPartials(local.grads, layout.tp);
    const share = layout.countsLoss ? local : { ...local, loss: 0, metrics: zeroed(local.metrics) };
    res = await sumStepOverRanks(
      layout.replicas,
      share,
      flags,
      layout.replicas.size > 1 ? trained.params : undefined,
    );
  }
  const grads = res.grads ?? local.grads;
  const norm = await trained.gradNorm(grads);
  // loss and norm are global (the same on every rank), so every rank takes or skips the update
  const applied = Number.isFinite(res.loss) && Number.isFinite(norm);
  if (applied) {
    // clipping folded into the update and each gradient freed once used: no second set of gradients
    o.optimizer.step(grads, o.lr, {
      gradScale: clipCoefficient(norm, o.maxGradNorm),
      release: true,
    });
    trained.afterStep();
    await trained.ready(); // validation and checkpoints between steps read the new parameters
  } else tf.dispose(Object.values(grads)); // a NaN/Inf update would poison every weight it touches
  freeDisposedBuffers(); // the step's gradients and temporaries go back to malloc for the next step
  return { loss: res.loss, metrics: res.metrics, gradNorm: norm, flags: res.flags, applied };
}
