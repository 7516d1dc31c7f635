import * as tf from '@tensorflow/tfjs-core';
import type { RankLayout } from '../parallel-model/rank-layout.js';
import { reduceTensorParallelPartials, tensorParallelNorm } from '../parallel-model/tensor-parallel-model.js';
import { AdamW, type AdamWOptions } from '../optim/adamw.js';
import { clipGradNorm } from '../optim/clip-grad-norm.js';
import { ShardedAdamW } from '../optim/sharded-adamw.js';
import { accumulateGradients } from './gradient-step.js';
import type { Objective } from './objective.js';
import type { PackedBin, StepTotals } from './pack-bins.js';
import { sumStepOverRanks } from './sum-over-ranks.js';

/** A trained model's optimizer: AdamW, or its FSDP form when the layout shards (`ddp_size` set on several ranks). */
export type LayoutOptimizer = AdamW | ShardedAdamW;

/** The optimizer `layout` calls for over `params` (this rank's tensors). */
export function optimizerFor(params: Readonly<Record<string, tf.Variable>>, options: AdamWOptions, layout: RankLayout): LayoutOptimizer {
  return layout.fsdp ? new ShardedAdamW(params, options, layout.fsdp, tensorParallelNorm(layout.tp)) : new AdamW(params, options);
}

const zeroed = (m: Record<string, number>) => Object.fromEntries(Object.keys(m).map((k) => [k, 0]));

/**
 * One optimizer step on this rank's bins (`totals` already summed over `layout.data`), as the
 * SFT/RM/DPO loop and the PPO updates take it: gradients accumulated over the bins (each share
 * divided by the global totals), tp-partial gradients summed over tp, then
 * - AdamW: one all-reduce over `layout.replicas` of gradients, loss, metrics and `flags` (the
 *   first cp rank of each data slot adds the loss and metrics), clipping by the global norm
 *   (tp shards added over tp), AdamW;
 * - ShardedAdamW: loss and metrics summed over `layout.data`; the optimizer reduce-scatters.
 * `flags` (e.g. "stop requested") come back summed over the whole world. Every rank calls it.
 */
export function layoutStep<P>(o: {
  layout: RankLayout;
  bins: readonly PackedBin[];
  totals: StepTotals;
  objective: Objective<P>;
  params: Readonly<Record<string, tf.Variable>>;
  optimizer: LayoutOptimizer;
  lr: number;
  maxGradNorm: number | null;
  flags?: readonly number[];
}): { loss: number; metrics: Record<string, number>; gradNorm: number; flags: number[] } {
  const { layout, params, optimizer } = o;
  const local = accumulateGradients(o.bins, o.totals, o.objective, params);
  reduceTensorParallelPartials(local.grads, layout.tp);
  let flags = [...(o.flags ?? [])];
  // the reductions below span part of the world under tp or cp: the flags go round all of it
  if (flags.length > 0 && layout.world.size > Math.min(layout.replicas.size, layout.data.size)) flags = Array.from(layout.world.allReduceSum(Float32Array.from(flags)));
  if (optimizer instanceof ShardedAdamW) {
    const res = sumStepOverRanks(layout.data, { loss: local.loss, metrics: local.metrics }, flags);
    const gradNorm = optimizer.step(local.grads, o.lr, o.maxGradNorm);
    tf.dispose(Object.values(local.grads));
    return { loss: res.loss, metrics: res.metrics, gradNorm, flags: res.flags };
  }
  const share = layout.countsLoss ? local : { ...local, loss: 0, metrics: zeroed(local.metrics) };
  const res = sumStepOverRanks(layout.replicas, share, flags, layout.replicas.size > 1 ? params : undefined);
  const grads = res.grads ?? local.grads;
  const clipped = clipGradNorm(grads, o.maxGradNorm, tensorParallelNorm(layout.tp));
  tf.dispose(Object.values(grads));
  optimizer.step(clipped.grads, o.lr);
  tf.dispose(Object.values(clipped.grads));
  return { loss: res.loss, metrics: res.metrics, gradNorm: clipped.norm, flags: res.flags };
}
