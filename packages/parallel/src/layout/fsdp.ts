import type * as tf from '@tensorflow/tfjs-core';
import type { PendingOp } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import {
  type FlatParamLayout,
  flattenParams,
  planUnits,
  shardOf,
  shardSquares,
  unflattenParams,
} from './flat-params.js';
import type { FsdpGroups, FsdpNormOptions } from './zero3-params.js';

/** One FSDP unit (typically a decoder layer, or the embedding): its layout and this rank's shards. */
export interface FsdpUnit {
  name: string;
  layout: FlatParamLayout;
  /** This rank's parameter shard [shardSize]; the optimizer updates it in place. */
  params: Float32Array;
  /** This rank's gradient shard [shardSize], after `reduceGrads`. */
  grads: Float32Array;
}

/**
 * Fully sharded data parallel over named parameters, model-agnostic: parameters are grouped
 * into units (`unitOf(name)`, e.g. `layers.3`), each unit is a flat buffer sharded over the
 * fsdp group. A training step gathers a unit just before using it (`gather`, which also starts
 * the all-gather of the next unit so it overlaps compute), reduce-scatters its gradients
 * (`reduceGrads`; all-reduced over ddp too), clips by the true global norm over all shards
 * (`clipGradNorm`) and lets an elementwise optimizer update the shards (`units[i].params`).
 * Plug a model in by handing it the gathered tensors for the unit it is about to run.
 */
export class FullyShardedParams {
  readonly units: FsdpUnit[];
  private readonly prefetched = new Map<number, PendingOp<Float32Array>>();

  private constructor(
    units: FsdpUnit[],
    readonly groups: FsdpGroups,
  ) {
    this.units = units;
  }

  /**
   * Shard full parameters (identical on every rank, e.g. loaded from a checkpoint) into units.
   * Units keep the order in which their first parameter appears in the map.
   */
  static fromFull(
    full: Record<string, tf.Tensor> | ReadonlyMap<string, tf.Tensor>,
    groups: FsdpGroups,
    unitOf: (name: string) => string = () => 'all',
  ): FullyShardedParams {
    const params: Record<string, tf.Tensor> =
      full instanceof Map ? Object.fromEntries(full) : (full as Record<string, tf.Tensor>);
    const units = planUnits(params, unitOf, groups.fsdp.size).map(({ name, layout }) => {
      const subset = Object.fromEntries(layout.names.map((n) => [n, params[n]!]));
      return {
        name,
        layout,
        params: shardOf(flattenParams(subset, layout), layout, groups.fsdp.rank),
        grads: new Float32Array(layout.shardSize),
      };
    });
    return new FullyShardedParams(units, groups);
  }

  private index(unit: number | string): number {
    const i = typeof unit === 'number' ? unit : this.units.findIndex((u) => u.name === unit);
    if (i < 0 || i >= this.units.length)
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `no FSDP unit ${JSON.stringify(unit)}; units are ${this.units.map((u) => u.name).join(', ')}.`,
      );
    return i;
  }

  /** Start gathering a unit now (overlaps with compute); `gather` picks it up. */
  prefetch(unit: number | string): void {
    const i = this.index(unit);
    if (!this.prefetched.has(i))
      this.prefetched.set(i, this.groups.fsdp.iallGather(this.units[i]!.params));
  }

  /** The full tensors of a unit, all-gathered over fsdp; prefetches the next unit unless told not to. */
  gather(
    unit: number | string,
    options: { prefetchNext?: boolean } = {},
  ): Record<string, tf.Tensor> {
    const i = this.index(unit);
    const pending = this.prefetched.get(i);
    this.prefetched.delete(i);
    const flat = pending ? pending.wait() : this.groups.fsdp.allGather(this.units[i]!.params);
    if ((options.prefetchNext ?? true) && i + 1 < this.units.length) this.prefetch(i + 1);
    return unflattenParams(flat, this.units[i]!.layout);
  }

  /**
   * Reduce a unit's full gradients to this rank's shard: reduce-scatter over fsdp, then
   * all-reduce over ddp, with `op` (`sum` when the loss is already scaled to the global mean,
   * `avg` to average over all data-parallel ranks).
   */
  reduceGrads(
    unit: number | string,
    grads: Record<string, tf.Tensor>,
    op: 'sum' | 'avg' = 'sum',
  ): Float32Array {
    const u = this.units[this.index(unit)]!;
    const shard = this.groups.fsdp.reduceScatter(flattenParams(grads, u.layout), op);
    if (this.groups.ddp && this.groups.ddp.size > 1) this.groups.ddp.allReduce(shard, op);
    u.grads.set(shard);
    return u.grads;
  }

  /**
   * The L2 norm of the whole model's gradient: each rank sums squares over its shards (the
   * padding is zero), one all-reduce over fsdp adds the shards up. ddp replicas hold the same
   * shards, so they are not added again. This is the true global norm, not a per-rank norm.
   * Under tensor parallelism the units hold tp shards: `across` (the tp group) adds the tp
   * ranks' sums, and `weightOf(name)` = 1/tp for tensors every tp rank holds whole counts them once.
   */
  gradNorm(options: FsdpNormOptions = {}): number {
    const { weightOf, across } = options;
    let sq = 0;
    for (const u of this.units)
      sq += shardSquares(u.grads, u.layout, this.groups.fsdp.rank, weightOf);
    const total = this.groups.fsdp.allReduce(Float32Array.of(sq), 'sum')[0]!;
    return Math.sqrt(
      across && across.size > 1 ? across.allReduce(Float32Array.of(total), 'sum')[0]! : total,
    );
  }

  /** Scale every gradient shard by min(1, maxNorm / (norm + 1e-6)), as torch's clip_grad_norm_; returns the norm before clipping. */
  clipGradNorm(maxNorm: number, options: FsdpNormOptions = {}): number {
    const norm = this.gradNorm(options);
    const scale = maxNorm / (norm + 1e-6);
    if (scale < 1)
      for (const u of this.units) for (let i = 0; i < u.grads.length; i++) u.grads[i]! *= scale;
    return norm;
  }

  /** The full parameters (gathered), e.g. to save a checkpoint or push weights to inference. */
  gatherAll(): Record<string, tf.Tensor> {
    return Object.assign({}, ...this.units.map((_, i) => this.gather(i, { prefetchNext: false })));
  }
}
