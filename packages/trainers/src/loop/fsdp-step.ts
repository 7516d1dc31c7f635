import { type DecoderModel, type ParamMap, createDecoderModel } from '@rl2/models';
import { type AdamWConfig, type AdamWShardState, FullyShardedParams, type ProcessGroup, fsdpTrainStep } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import type { Objective } from './objective.js';
import type { PackedBin, StepTotals } from './pack-bins.js';

/** FSDP unit of an HF parameter name: one per decoder layer, the rest by top-level module. */
export function decoderUnitOf(name: string): string {
  return /^model\.layers\.\d+/.exec(name)?.[0] ?? name.split('.').slice(0, 2).join('.');
}

/** Shards a loaded model's parameters over `fsdp` (replicated over `ddp`), one unit per layer. */
export function shardModel(model: DecoderModel, groups: { fsdp: ProcessGroup; ddp?: ProcessGroup }): FullyShardedParams {
  return FullyShardedParams.fromFull(model.params, groups, decoderUnitOf);
}

export interface FsdpObjectiveStepOptions {
  optimizer: AdamWConfig;
  /** One AdamW state per unit, kept between steps (filled on the first step). */
  states: AdamWShardState[];
  maxGradNorm: number | null;
  /** Data-parallel group the loss is summed over (the world for pure FSDP). */
  dp: ProcessGroup;
}

/**
 * One optimizer step of a trainer objective under FSDP (ZeRO-3 layout of @rl2/parallel): the
 * units are gathered, `model` is rebuilt over the gathered tensors, each of this rank's bins adds
 * its share of the global-mean loss (`totals` already summed over ranks), gradients are
 * reduce-scattered, clipped by the true global norm, and AdamW updates this rank's shards (its
 * optimizer state is sharded too). `fsdp.gatherAll()` returns the updated full parameters.
 */
export function fsdpObjectiveStep<P>(
  fsdp: FullyShardedParams,
  model: DecoderModel,
  objectiveOf: (model: DecoderModel) => Objective<P>,
  bins: readonly PackedBin[],
  totals: StepTotals,
  o: FsdpObjectiveStepOptions,
): { loss: number; gradNorm: number } {
  const lossOf = (params: ReadonlyMap<string, tf.Tensor>): tf.Scalar => {
    const objective = objectiveOf(createDecoderModel(model.config, params as ParamMap, { linear: model.linear, attention: model.attention }));
    const shares = bins.map((bin) => {
      const prepared = objective.prepare?.(bin);
      const { loss } = objective.loss(bin, totals, prepared);
      if (prepared !== undefined) objective.release?.(prepared);
      return loss;
    });
    // a rank without bins still takes part in every collective, with zero gradients
    if (shares.length === 0) return tf.mul(0, tf.addN([...params.values()].map((t) => tf.sum(t)))) as tf.Scalar;
    return tf.addN(shares) as tf.Scalar;
  };
  return fsdpTrainStep(fsdp, lossOf, { optimizer: o.optimizer, states: o.states, maxGradNorm: o.maxGradNorm ?? Number.POSITIVE_INFINITY, dp: o.dp });
}
