import {
  type Scalar,
  type Tensor,
  cast,
  div,
  greater,
  neg,
  sub,
  sum,
  tidy,
} from '@tensorflow/tfjs-core';
import { logSigmoid } from './internal/log-sigmoid.js';
import { pairDivisor } from './internal/pair-totals.js';
import type { LossResult } from './loss-result.js';

/** Reward-model scores of preference pairs. */
export interface PairScores {
  /** [P] score of each chosen response (RL2: the value head at its last token). */
  readonly chosen: Tensor;
  /** [P] score of each rejected response. */
  readonly rejected: Tensor;
}

/**
 * Bradley-Terry reward-model loss (Ouyang et al. 2022, https://arxiv.org/abs/2203.02155):
 *   loss = sum_pairs -log sigmoid(r_chosen - r_rejected) / totalPairs
 * `totalPairs` is the number of pairs in the whole update over all ranks (default P).
 * Metrics (same normalisation): accuracy (margin > 0), margin, chosen, rejected.
 */
export function bradleyTerryLoss(
  scores: PairScores,
  options: { readonly totalPairs?: number } = {},
): LossResult<'accuracy' | 'margin' | 'chosen' | 'rejected'> {
  const d = pairDivisor(
    { chosen: scores.chosen, rejected: scores.rejected },
    options.totalPairs,
    'bradleyTerryLoss',
  );
  const mean = (x: Tensor) => div(sum(x), d) as Scalar;
  const { loss, metrics } = tidy(() => {
    const margin = sub(scores.chosen, scores.rejected);
    const named = {
      accuracy: mean(cast(greater(margin, 0), 'float32')),
      margin: mean(margin),
      chosen: mean(scores.chosen),
      rejected: mean(scores.rejected),
    };
    return { loss: div(sum(neg(logSigmoid(margin))), d) as Scalar, metrics: named };
  });
  return { loss, metrics };
}
