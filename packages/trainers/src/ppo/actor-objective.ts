import { actorPpoLoss } from '@rl2/algos';
import type { TrainingSequence } from '@rl2/rollout';
import { type DecoderModel, tokenLogprobs } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';
import { AVG_LEVELS } from '../sft/sft-objective.js';
import type { PerSequence } from './forward-passes.js';
import type { PpoConfig } from './ppo-config.js';
import { type RolloutBin, binRow } from './rollout-bins.js';

/** The rollout-side tensors an actor update reads, per sequence. */
export interface ActorTargets {
  readonly sequences: readonly TrainingSequence[];
  readonly advantages: PerSequence;
  readonly oldLogps?: PerSequence;
  readonly refLogps?: PerSequence;
}

/**
 * The actor's share of the loss per packed micro-batch (algos `actorPpoLoss`): clipped
 * surrogate on the advantages, ratio against the old log-probs (the detached current ones when
 * there is no old pass), TIS against the engine's log-probs, KL to the reference when
 * kl.type=loss, minus entropy.coef * entropy; aggregated by actor.avg_level over the update.
 */
export function actorObjective(model: DecoderModel, targets: ActorTargets, cfg: Pick<PpoConfig, 'actor' | 'kl' | 'entropy'>): Objective {
  const klInLoss = cfg.kl.type === 'loss' && cfg.kl.coef > 0;
  return {
    groupSize: 1,
    headline: 'clipFraction',
    loss: (packed, totals) => {
      const bin = packed as RolloutBin;
      const t = bin.inputIds.length;
      const { logprobs, entropy } = tokenLogprobs(model, binBatch(bin), bin.targets, { temperature: cfg.actor.temperature, recompute: cfg.actor.gradient_checkpointing });
      const layout = binLayout(bin);
      const seqs = targets.sequences;
      return actorPpoLoss(
        {
          ...layout,
          logps: tf.reshape(logprobs, [1, t]),
          entropy: tf.reshape(entropy, [1, t]),
          advantages: binRow(bin, targets.advantages),
          engineLogps: binRow(bin, seqs.map((s) => s.llmLogps)),
          ...(targets.oldLogps ? { oldLogps: binRow(bin, targets.oldLogps) } : {}),
          ...(klInLoss && targets.refLogps ? { refLogps: binRow(bin, targets.refLogps) } : {}),
        },
        {
          clip: cfg.actor.clip,
          tisCoef: cfg.actor.tis_coef,
          entropyCoef: cfg.entropy.coef,
          ...(klInLoss ? { kl: { coef: cfg.kl.coef, estimator: cfg.kl.loss_estimator } } : {}),
          aggregation: { mode: AVG_LEVELS[cfg.actor.avg_level], totals: { actionTokens: totals.actionTokens, sequences: totals.sequences } },
        },
      );
    },
  };
}

