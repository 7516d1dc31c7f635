import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import {
  type AdamWConfig,
  type AdamWShardState,
  adamwShardStep,
  createAdamWShardState,
} from './adamw-shard.js';
import type { FullyShardedParams } from './fsdp.js';

export interface FsdpTrainStepOptions {
  optimizer: AdamWConfig;
  /** One state per unit, kept between steps; created on the first step when empty. */
  states: AdamWShardState[];
  /** Clip by the global gradient norm (RL2's max_grad_norm, default 1.0); Infinity turns it off. */
  maxGradNorm?: number;
  /** Data-parallel group to sum the reported loss over (default: none, the local loss). */
  dp?: ProcessGroup;
}

/**
 * One optimizer step of any model under FSDP, given its loss as a function of the parameters by
 * name (HF names; a `ReadonlyMap`, the shape `@rl2/models` calls `ParamLookup`). The loss must
 * already be this rank's share of the global mean (divide by the global token count): gradients
 * are then summed over fsdp (reduce-scatter) and ddp (all-reduce), clipped by the true global
 * norm, and AdamW updates each rank's shards. Gathers every unit for the call (prefetching the
 * next while unflattening the current); a model that frees layers as it goes calls
 * `fsdp.gather(i)` per layer itself. Returns the loss (summed over `dp`) and the norm before clipping.
 */
export function fsdpTrainStep(
  fsdp: FullyShardedParams,
  lossOf: (params: ReadonlyMap<string, tf.Tensor>) => tf.Scalar,
  o: FsdpTrainStepOptions,
): { loss: number; gradNorm: number } {
  const gathered = fsdp.units.map((_, i) => fsdp.gather(i));
  const names = gathered.flatMap((g) => Object.keys(g));
  const tensors = gathered.flatMap((g) => Object.values(g));
  const { value, grads } = tf.valueAndGrads((...ts: tf.Tensor[]) =>
    lossOf(new Map(names.map((n, i) => [n, ts[i]!]))),
  )(tensors);
  const byName = new Map(names.map((n, i) => [n, grads[i]!]));
  fsdp.units.forEach((u, i) => {
    fsdp.reduceGrads(i, Object.fromEntries(u.layout.names.map((n) => [n, byName.get(n)!])), 'sum');
  });
  const gradNorm = fsdp.clipGradNorm(o.maxGradNorm ?? 1.0);
  fsdp.units.forEach((u, i) => {
    o.states[i] ??= createAdamWShardState(u.params.length);
    adamwShardStep(u.params, u.grads, o.states[i]!, o.optimizer);
  });
  const local = value.dataSync()[0]!;
  tf.dispose([value, ...grads, ...tensors]);
  const loss = o.dp && o.dp.size > 1 ? o.dp.allReduce(Float32Array.of(local), 'sum')[0]! : local;
  return { loss, gradNorm };
}
