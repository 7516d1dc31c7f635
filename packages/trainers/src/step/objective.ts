import type { LossResult } from '@rl2/algos';
import type * as tf from '@tensorflow/tfjs-core';
import type { PackedBin, StepTotals } from '../bins/pack-bins.js';

/**
 * What a trainer plugs into the shared loop: how one packed micro-batch becomes its share of
 * the step's loss (the maths is in @rl2/algos). `prepare` runs outside the gradient tape
 * (DPO's reference log-probs); its tensors are disposed after the bin.
 */
export interface Objective<P = tf.Tensor[]> {
  /** 1 for SFT; 2 for RM/DPO, whose (chosen, rejected) pairs share a bin. */
  readonly groupSize: 1 | 2;
  /** Metric shown next to the loss in the progress display (e.g. accuracy). */
  readonly headline?: string;
  prepare?(bin: PackedBin): P;
  loss(bin: PackedBin, totals: StepTotals, prepared: P | undefined): LossResult<string>;
  /** Frees what `prepare` returned. */
  release?(prepared: P): void;
}
