import { type AdamWShardState, type FsdpGroups, type FsdpNormOptions, FullyShardedParams, adamwShardStep, createAdamWShardState, shardOf } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { decoderUnitOf } from '../loop/fsdp-step.js';
import type { AdamWOptions, AdamWState } from './adamw.js';
import type { NamedGrads } from './clip-grad-norm.js';

/**
 * AdamW with gradients and optimizer state sharded over an FSDP group (replicated over ddp), as
 * RL2's FSDP (ZeRO) layout: `step` reduce-scatters each rank's local gradient shares (summed,
 * the losses being divided by global totals), clips by the true global norm, updates this rank's
 * flat shard of each decoder layer with torch-order AdamW, and all-gathers the new weights back
 * into the model's variables. Each rank keeps 1/fsdp of m and v. The model still holds full
 * weights between steps (the forward pass is the unsharded one).
 */
export class ShardedAdamW {
  private readonly fsdp: FullyShardedParams;
  private readonly states: AdamWShardState[];

  constructor(
    private readonly params: Readonly<Record<string, tf.Variable>>,
    private readonly opts: AdamWOptions,
    groups: FsdpGroups,
    /** Under tensor parallelism: how the global norm adds up over tp (see `tensorParallelNorm`). */
    private readonly norm: FsdpNormOptions = {},
  ) {
    this.fsdp = FullyShardedParams.fromFull(params, groups, decoderUnitOf);
    this.states = this.fsdp.units.map((u) => createAdamWShardState(u.params.length));
  }

  /** Optimizer steps taken so far. */
  get stepCount(): number {
    return this.states[0]?.step ?? 0;
  }

  /**
   * One update from this rank's gradient shares (not yet summed over ranks); returns the global
   * gradient norm before clipping. Every rank calls it. Inputs are not disposed.
   */
  step(localGrads: NamedGrads, lr: number, maxGradNorm: number | null): number {
    this.fsdp.units.forEach((u, i) => {
      const grads = tf.tidy(() => Object.fromEntries(u.layout.names.map((n) => [n, localGrads[n] ?? tf.zerosLike(this.params[n] as tf.Variable)])));
      this.fsdp.reduceGrads(i, grads, 'sum');
      for (const n of u.layout.names) if (!localGrads[n]) grads[n]?.dispose();
    });
    const norm = this.fsdp.clipGradNorm(maxGradNorm ?? Number.POSITIVE_INFINITY, this.norm);
    const [beta1, beta2] = this.opts.betas;
    this.fsdp.units.forEach((u, i) => {
      adamwShardStep(u.params, u.grads, this.states[i] as AdamWShardState, { lr, beta1, beta2, eps: this.opts.eps, weightDecay: this.opts.weightDecay });
    });
    const full = this.fsdp.gatherAll();
    for (const [n, t] of Object.entries(full)) (this.params[n] as tf.Variable).assign(t);
    tf.dispose(Object.values(full));
    return norm;
  }

  /** The whole state, gathered from the shards (a collective: every rank calls it). */
  state(): AdamWState {
    const moments: AdamWState['moments'] = {};
    this.fsdp.units.forEach((u, i) => {
      const s = this.states[i] as AdamWShardState;
      const m = this.gatherFlat(s.m);
      const v = this.gatherFlat(s.v);
      u.layout.names.forEach((n, k) => {
        const at = u.layout.offsets[k] as number;
        const shape = u.layout.shapes[k] as number[];
        const size = shape.reduce((a, b) => a * b, 1);
        moments[n] = { shape, m: m.slice(at, at + size), v: v.slice(at, at + size) };
      });
    });
    return { step: this.stepCount, moments };
  }

  /** Takes this rank's shards of a state written by `state()` (or by the unsharded AdamW). */
  loadState(state: AdamWState): void {
    this.fsdp.units.forEach((u, i) => {
      const s = this.states[i] as AdamWShardState;
      const flat = (key: 'm' | 'v') => {
        const out = new Float32Array(u.layout.paddedNumel);
        u.layout.names.forEach((n, k) => {
          const saved = state.moments[n];
          if (saved) out.set(saved[key], u.layout.offsets[k] as number);
        });
        return shardOf(out, u.layout, this.fsdp.groups.fsdp.rank);
      };
      s.m.set(flat('m'));
      s.v.set(flat('v'));
      s.step = state.step;
    });
  }

  dispose(): void {}

  private gatherFlat(shard: Float32Array): Float32Array {
    return this.fsdp.groups.fsdp.allGather(shard);
  }
}
