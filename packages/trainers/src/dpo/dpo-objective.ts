import { type PreferenceLoss, dpoLoss, sequenceSums, splitPairs } from '@rl2/algos';
import { type DecoderModel, tokenLogprobs } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch, binLayout, binSequenceLengths } from '../bins/bin-tensors.js';
import type { Objective } from '../step/objective.js';
import type { PackedBin } from '../bins/pack-bins.js';

/** DPO knobs from `actor.*`. */
export interface DpoObjectiveOptions {
  readonly variant: PreferenceLoss;
  readonly beta: number;
  readonly labelSmoothing: number;
  readonly simpoGamma: number | null;
  readonly nllCoef: number;
  readonly recompute: boolean;
}

/** Per-sequence log pi(y|x) of a bin, split into chosen [P] and rejected [P]. */
function pairLogps(model: DecoderModel, bin: PackedBin, recompute: boolean) {
  const { logprobs, entropy } = tokenLogprobs(model, binBatch(bin), bin.targets, { recompute });
  entropy.dispose();
  return splitPairs(sequenceSums(tf.reshape(logprobs, [1, bin.inputIds.length]), binLayout(bin)));
}

/**
 * DPO and its variants (algos `dpoLoss`): reference log-probs first, outside the tape
 * (RL2 computes them before the update), then r = beta * (logp - ref_logp) per sequence.
 * SimPO needs no reference model (`ref` undefined).
 */
export function dpoObjective(
  model: DecoderModel,
  ref: DecoderModel | undefined,
  opts: DpoObjectiveOptions,
): Objective<tf.Tensor[]> {
  return {
    groupSize: 2,
    headline: 'accuracy',
    prepare: ref
      ? (bin) =>
          tf.tidy(() => {
            const { chosen, rejected } = pairLogps(ref, bin, false);
            return [chosen, rejected];
          })
      : undefined,
    release: (prepared) => tf.dispose(prepared),
    loss: (bin, totals, prepared) => {
      const { chosen, rejected } = pairLogps(model, bin, opts.recompute);
      const lengths = splitPairs(binSequenceLengths(bin));
      return dpoLoss(
        {
          chosenLogps: chosen,
          rejectedLogps: rejected,
          refChosenLogps: prepared?.[0],
          refRejectedLogps: prepared?.[1],
          chosenLengths: lengths.chosen,
          rejectedLengths: lengths.rejected,
        },
        {
          variant: opts.variant,
          beta: opts.beta,
          labelSmoothing: opts.labelSmoothing,
          ...(opts.simpoGamma === null ? {} : { simpoGamma: opts.simpoGamma }),
          nllCoef: opts.nllCoef,
          totalPairs: totals.pairs,
        },
      );
    },
  };
}
