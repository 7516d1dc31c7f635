import { type LossAggregation, sftLoss } from '@rl2/algos';
import { type DecoderModel, tokenLogprobs } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';

/** RL2's avg_level names -> @rl2/algos aggregation modes. */
export const AVG_LEVELS: Record<'token' | 'sequence', LossAggregation> = {
  token: 'token-mean',
  sequence: 'seq-mean-token-mean',
};

/** SFT: loss = aggregate(-log pi(action), action_mask, avg_level) over the step (algos `sftLoss`). */
export function sftObjective(
  model: DecoderModel,
  opts: { avgLevel: 'token' | 'sequence'; recompute: boolean },
): Objective {
  return {
    groupSize: 1,
    loss: (bin, totals) => {
      const { logprobs, entropy } = tokenLogprobs(model, binBatch(bin), bin.targets, {
        recompute: opts.recompute,
      });
      entropy.dispose();
      const layout = binLayout(bin);
      const logps = tf.reshape(logprobs, [1, bin.inputIds.length]);
      return sftLoss(
        { logps, ...layout },
        {
          aggregation: {
            mode: AVG_LEVELS[opts.avgLevel],
            totals: { actionTokens: totals.actionTokens, sequences: totals.sequences },
          },
        },
      );
    },
  };
}
