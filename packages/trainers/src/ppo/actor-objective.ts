import { type AggregationOptions, actorPpoLoss, parseLossAggregation } from '@rl2/algos';
import type { TrainingSequence } from '@rl2/rollout';
import { type DecoderModel, tokenLogprobs } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';
import type { StepTotals } from '../bins/pack-bins.js';
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

/** `avg_level` + `norm_length` of an actor or critic section as @rl2/algos aggregation options over the update's totals. */
export function sectionAggregation(
  section: { avg_level: string; norm_length: number },
  totals: Pick<StepTotals, 'actionTokens' | 'sequences'>,
): AggregationOptions {
  return {
    mode: parseLossAggregation(section.avg_level),
    normLength: section.norm_length,
    totals: { actionTokens: totals.actionTokens, sequences: totals.sequences },
  };
}

/**
 * The actor's share of the loss per packed micro-batch (algos `actorPpoLoss`): clipped
 * surrogate on the advantages with the ratio per token (actor.loss=ppo) or per sequence
 * (gspo) against the old log-probs (the detached current ones when there is no old pass),
 * clipped to [1 - clip_low, 1 + clip_high], dual-clip, TIS against the engine's log-probs,
 * KL to the reference when kl.type=loss (coefficient `klCoef`: kl.coef, or its adaptive value),
 * minus entropy.coef * entropy; aggregated by actor.avg_level over the update.
 */
export function actorObjective(
  model: DecoderModel,
  targets: ActorTargets,
  cfg: Pick<PpoConfig, 'actor' | 'kl' | 'entropy'>,
  klCoef = cfg.kl.coef,
): Objective {
  const klInLoss = cfg.kl.type === 'loss' && klCoef > 0;
  const a = cfg.actor;
  return {
    groupSize: 1,
    headline: 'clipFraction',
    loss: (packed, totals) => {
      const bin = packed as RolloutBin;
      const t = bin.inputIds.length;
      const { logprobs, entropy } = tokenLogprobs(model, binBatch(bin), bin.targets, {
        temperature: a.temperature,
        recompute: a.gradient_checkpointing,
      });
      const layout = binLayout(bin);
      const seqs = targets.sequences;
      return actorPpoLoss(
        {
          ...layout,
          logps: tf.reshape(logprobs, [1, t]),
          entropy: tf.reshape(entropy, [1, t]),
          advantages: binRow(bin, targets.advantages),
          engineLogps: binRow(
            bin,
            seqs.map((s) => s.llmLogps),
          ),
          ...(targets.oldLogps ? { oldLogps: binRow(bin, targets.oldLogps) } : {}),
          ...(klInLoss && targets.refLogps ? { refLogps: binRow(bin, targets.refLogps) } : {}),
        },
        {
          clipLow: a.clip_low,
          clipHigh: a.clip_high,
          ...(a.dual_clip === null ? {} : { dualClip: a.dual_clip }),
          ratioLevel: a.loss === 'gspo' ? 'sequence' : 'token',
          tisCoef: a.tis_coef,
          entropyCoef: cfg.entropy.coef,
          ...(klInLoss ? { kl: { coef: klCoef, estimator: cfg.kl.loss_estimator } } : {}),
          aggregation: sectionAggregation(a, totals),
        },
      );
    },
  };
}
