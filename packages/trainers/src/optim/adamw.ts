import { adamWInPlace, readsSynchronously } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { TrainersError } from '../errors.js';
import type { NamedGrads } from './clip-grad-norm.js';

/** AdamW hyper-parameters; the learning rate comes per step from the schedule. */
export interface AdamWOptions {
  readonly betas: readonly [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  /**
   * Per-parameter multipliers of the step's learning rate (1 for a parameter not named): LoRA+
   * (https://arxiv.org/abs/2402.12354) steps the adapters' B matrices at lr_ratio x lr.
   */
  readonly lrScale?: Readonly<Record<string, number>>;
}

/** Serialisable optimizer state: step count and both moments per parameter. */
export interface AdamWState {
  readonly step: number;
  readonly moments: Record<string, { shape: number[]; m: Float32Array; v: Float32Array }>;
}

/**
 * AdamW (Loshchilov & Hutter, https://arxiv.org/abs/1711.05101) as torch.optim.AdamW:
 *   p <- p * (1 - lr * wd)                         decoupled weight decay
 *   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * over a named map of tf.Variables. Moments live in tf.Variables owned by the optimizer.
 */
export class AdamW {
  private t = 0;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();

  constructor(
    private readonly params: Readonly<Record<string, tf.Variable>>,
    private readonly opts: AdamWOptions,
  ) {}

  /** Optimizer steps taken so far. */
  get stepCount(): number {
    return this.t;
  }

  private moment(store: Map<string, tf.Variable>, name: string): tf.Variable {
    let slot = store.get(name);
    if (!slot) {
      const p = this.params[name];
      slot = tf.tidy(() => tf.variable(tf.zerosLike(p), false)); // the zeros go, the variable stays
      store.set(name, slot);
    }
    return slot;
  }

  /**
   * One update with learning rate `lr`; parameters without a gradient are left untouched.
   * `gradScale` multiplies every gradient first (the clipping factor, so that no clipped copy
   * of all gradients is made); `release` disposes each gradient as soon as its parameter is
   * updated, so that the moments created on the first step take the gradients' place in memory.
   */
  step(
    grads: NamedGrads,
    lr: number,
    options: { gradScale?: number; release?: boolean } = {},
  ): void {
    const { gradScale = 1, release = false } = options;
    for (const name of Object.keys(grads)) {
      if (!this.params[name])
        throw new TrainersError(
          'INVALID_ARGUMENT',
          `AdamW.step: gradient for unknown parameter "${name}"`,
        );
    }
    this.t += 1;
    const [b1, b2] = this.opts.betas;
    for (const [name, raw] of Object.entries(grads)) {
      const p = this.params[name] as tf.Variable;
      const m = this.moment(this.m, name);
      const v = this.moment(this.v, name);
      // a released gradient is scaled over its own buffer; otherwise into a new tensor (one parameter's size at a time)
      // the clipping factor goes into the update itself (the native kernel scales g as it reads it)
      adamWInPlace(p, raw, m, v, {
        lr: lr * (this.opts.lrScale?.[name] ?? 1),
        beta1: b1,
        beta2: b2,
        eps: this.opts.eps,
        weightDecay: this.opts.weightDecay,
        step: this.t,
        gradScale,
      });
      if (release) raw.dispose();
    }
  }

  /**
   * The state (for checkpoints). On cpu-style backends the arrays are views of the live moment
   * buffers, which the next `step` updates in place: write them out before stepping again. On a
   * GPU backend they are copies, read back asynchronously one moment at a time.
   */
  async state(): Promise<AdamWState> {
    const read = async (t: tf.Tensor) =>
      (readsSynchronously() ? t.dataSync() : await t.data()) as Float32Array;
    const moments: AdamWState['moments'] = {};
    for (const [name, m] of this.m) {
      const v = this.v.get(name) as tf.Variable;
      moments[name] = { shape: m.shape, m: await read(m), v: await read(v) };
    }
    return { step: this.t, moments };
  }

  /** Restores a state written by `state()`; shapes must match the parameters. */
  loadState(state: AdamWState): void {
    this.t = state.step;
    for (const [name, s] of Object.entries(state.moments)) {
      const p = this.params[name];
      if (!p || p.shape.join(',') !== s.shape.join(',')) {
        throw new TrainersError(
          'CHECKPOINT',
          `optimizer state for "${name}" (shape [${s.shape}]) does not match the model ` +
            `(${p ? `shape [${p.shape}]` : 'no such parameter'}); resume with the same model`,
        );
      }
      this.restore(this.m, name, s.m, s.shape);
      this.restore(this.v, name, s.v, s.shape);
    }
  }

  /** A moment from a checkpoint: a new variable over `values` (no zeros made first), or assigned to the existing one. */
  private restore(
    store: Map<string, tf.Variable>,
    name: string,
    values: Float32Array,
    shape: number[],
  ): void {
    const t = tf.tensor(values, shape);
    const slot = store.get(name);
    if (slot) slot.assign(t);
    else store.set(name, tf.variable(t, false));
    t.dispose();
  }

  /** Frees the moment buffers. */
  dispose(): void {
    for (const x of [...this.m.values(), ...this.v.values()]) x.dispose();
    this.m.clear();
    this.v.clear();
  }
}
