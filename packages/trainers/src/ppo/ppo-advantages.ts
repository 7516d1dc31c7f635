import {
  approxKl,
  getAdvantageEstimator,
  klPenalizedAdvantages,
  klPenalizedRewards,
} from '@rl2/algos';
import { type TrainingBatch, padTrainingBatch } from '@rl2/rollout';
import * as tf from '@tensorflow/tfjs-core';
import type { PerSequence } from './forward-passes.js';
import type { PpoConfig } from './ppo-config.js';

/** What the advantage phase reads besides the rollout. */
export interface AdvantageInputs {
  /** Reference log-probs (kl.coef > 0). */
  readonly refLogps?: PerSequence;
  /** Log-probs of the policy before this step's updates (kl.coef > 0 or update_per_rollout > 1). */
  readonly oldLogps?: PerSequence;
  /** Critic values (adv.estimator=gae). */
  readonly values?: PerSequence;
}

/** Advantages (and GAE returns) per sequence, plus the KL to the reference on action tokens. */
export interface AdvantageOutputs {
  readonly advantages: PerSequence;
  readonly returns?: PerSequence;
  /** Mean k1 KL(old || ref) over action tokens (undefined without a reference pass). */
  readonly kl?: number;
  /** Mean over sequences of the summed k1 KL(old || ref) on their action tokens: what adaptive KL (kl.target) steers. */
  readonly klPerSequence?: number;
}

const padRows = (rows: PerSequence, t: number) =>
  rows.map((r) => [...r, ...new Array(t - r.length).fill(0)]);
const unpad = (x: tf.Tensor, lengths: readonly number[]) =>
  (x.arraySync() as number[][]).map((row, i) => row.slice(0, lengths[i]));

/**
 * The advantage phase of RL2's PPO step (rank 0 in RL2; the maths is in @rl2/algos):
 * kl.type=reward subtracts coef * KL from the per-token rewards before the estimator,
 * the estimator named by adv.estimator runs over the trajectories (responses of one prompt
 * consecutive), kl.type=advantage subtracts coef * KL afterwards. KL = estimator(old - ref);
 * coef = `klCoef` (kl.coef, or its adaptive value under kl.target).
 */
export function computePpoAdvantages(
  batch: TrainingBatch,
  inputs: AdvantageInputs,
  cfg: Pick<PpoConfig, 'kl' | 'adv'>,
  klCoef = cfg.kl.coef,
): AdvantageOutputs {
  const padded = padTrainingBatch(batch);
  const lengths = batch.sequences.map((s) => s.states.length);
  const t = padded.rewards[0]?.length ?? 0;
  return tf.tidy(() => {
    const shape: [number, number] = [lengths.length, t];
    const actionMask = tf.tensor2d(padded.actionMask, shape, 'float32');
    let rewards: tf.Tensor = tf.tensor2d(padded.rewards, shape, 'float32');
    const trajectoryIds = tf.tensor1d(padded.trajectoryIds, 'int32');
    let klTokens: tf.Tensor | undefined;
    let kl: number | undefined;
    let klPerSequence: number | undefined;
    if (inputs.refLogps && inputs.oldLogps) {
      const ref = tf.tensor2d(padRows(inputs.refLogps, t), shape);
      const old = tf.tensor2d(padRows(inputs.oldLogps, t), shape);
      const tokens = Math.max(1, tf.sum(actionMask).dataSync()[0]);
      const k1 = tf.sum(tf.mul(approxKl(old, ref, 'k1'), actionMask)).dataSync()[0];
      kl = k1 / tokens;
      klPerSequence = k1 / Math.max(1, lengths.length);
      klTokens = approxKl(old, ref, cfg.kl.reward_estimator);
    }
    if (klTokens && klCoef > 0 && cfg.kl.type === 'reward')
      rewards = klPenalizedRewards(rewards, klTokens, actionMask, klCoef);
    const values = inputs.values ? tf.tensor2d(padRows(inputs.values, t), shape) : undefined;
    const estimate = getAdvantageEstimator(cfg.adv.estimator);
    const out = estimate(
      { rewards, actionMask, trajectoryIds, ...(values ? { values } : {}) },
      {
        gamma: cfg.adv.gamma,
        lambda: cfg.adv.lamda,
        responsesPerPrompt: batch.responsesPerPrompt,
        normVar: cfg.adv.norm_var,
        globalBaseline: cfg.adv.global_norm,
      },
    );
    let advantages = out.advantages;
    if (klTokens && klCoef > 0 && cfg.kl.type === 'advantage')
      advantages = klPenalizedAdvantages(advantages, klTokens, actionMask, klCoef);
    return {
      advantages: unpad(advantages, lengths),
      ...(out.returns ? { returns: unpad(out.returns, lengths) } : {}),
      ...(kl === undefined ? {} : { kl, klPerSequence }),
    };
  });
}
