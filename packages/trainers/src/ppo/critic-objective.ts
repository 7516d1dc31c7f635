import { criticValueLoss } from '@rl2/algos';
import { type DecoderModel, tokenValues } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';
import { sectionAggregation } from './actor-objective.js';
import type { PerSequence } from './forward-passes.js';
import type { PpoConfig } from './ppo-config.js';
import { type RolloutBin, binRow } from './rollout-bins.js';

/** The rollout-side tensors a critic update reads, per sequence. */
export interface CriticTargets {
  readonly oldValues: PerSequence;
  readonly returns: PerSequence;
}

/** The critic's share of the loss per micro-batch (algos `criticValueLoss`, clipped around the rollout-time values). */
export function criticObjective(
  critic: DecoderModel,
  targets: CriticTargets,
  section: Pick<
    PpoConfig['critic'],
    'gradient_checkpointing' | 'clip' | 'avg_level' | 'norm_length'
  >,
): Objective {
  return {
    groupSize: 1,
    headline: 'valueError',
    loss: (packed, totals) => {
      const bin = packed as RolloutBin;
      const t = bin.inputIds.length;
      const values = tokenValues(critic, binBatch(bin), {
        recompute: section.gradient_checkpointing,
      });
      return criticValueLoss(
        {
          ...binLayout(bin),
          values: tf.reshape(values, [1, t]),
          oldValues: binRow(bin, targets.oldValues),
          returns: binRow(bin, targets.returns),
        },
        { clip: section.clip, aggregation: sectionAggregation(section, totals) },
      );
    },
  };
}
