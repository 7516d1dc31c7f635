import { bradleyTerryLoss, sequenceSums, splitPairs } from '@rl2/algos';
import { type DecoderModel, tokenValues } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';

/**
 * RM: the value head read at each sequence's last token is its reward;
 * loss = -log sigmoid(r_chosen - r_rejected) summed over pairs / pairs in the step
 * (algos `bradleyTerryLoss`).
 */
export function rmObjective(model: DecoderModel, opts: { recompute: boolean }): Objective {
  return {
    groupSize: 2,
    headline: 'accuracy',
    loss: (bin, totals) => {
      const values = tf.reshape(tokenValues(model, binBatch(bin), { recompute: opts.recompute }), [
        1,
        bin.inputIds.length,
      ]);
      // lossMask is the eos mask here: the sum per sequence picks the last token's value
      const rewards = sequenceSums(values, binLayout(bin));
      return bradleyTerryLoss(splitPairs(rewards), { totalPairs: totals.pairs });
    },
  };
}
