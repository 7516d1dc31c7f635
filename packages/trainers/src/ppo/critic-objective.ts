import { criticValueLoss } from '@rl2/algos';
import { type DecoderModel, tokenValues } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../loop/bin-tensors.js';
import type { Objective } from '../loop/objective.js';
import { AVG_LEVELS } from '../sft/sft-objective.js';
import type { PerSequence } from './forward-passes.js';
import type { PpoConfig } from './ppo-config.js';
import { type RolloutBin, binField } from './rollout-bins.js';

/** A packed row [1, T] of a per-token field. */
const row = (values: number[]) => tf.tensor2d(values, [1, values.length], 'float32');

/** The rollout-side tensors a critic update reads, per sequence. */
export interface CriticTargets {
  readonly oldValues: PerSequence;
  readonly returns: PerSequence;
}

/** The critic's share of the loss per micro-batch (algos `criticValueLoss`, clipped around the rollout-time values). */
export function criticObjective(critic: DecoderModel, targets: CriticTargets, cfg: Pick<PpoConfig, 'critic'>): Objective {
  return {
    groupSize: 1,
    headline: 'valueError',
    loss: (packed, totals) => {
      const bin = packed as RolloutBin;
      const t = bin.inputIds.length;
      const values = tokenValues(critic, binBatch(bin), { recompute: cfg.critic.gradient_checkpointing });
      return criticValueLoss(
        {
          ...binLayout(bin),
          values: tf.reshape(values, [1, t]),
          oldValues: row(binField(bin, targets.oldValues)),
          returns: row(binField(bin, targets.returns)),
        },
        { clip: cfg.critic.clip, aggregation: { mode: AVG_LEVELS[cfg.critic.avg_level], totals: { actionTokens: totals.actionTokens, sequences: totals.sequences } } },
      );
    },
  };
}
