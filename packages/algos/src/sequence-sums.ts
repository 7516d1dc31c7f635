import { type Tensor, type Tensor1D, mul, reshape, tidy, unstack } from '@tensorflow/tfjs-core';
import { AlgosError } from './errors.js';
import { expectShape } from './internal/check.js';
import { resolveSegments, segmentSums } from './internal/segments.js';
import type { TokenLayout } from './layout.js';

/**
 * Per-sequence sums of per-token values over action tokens: `values [B, T]` -> `[S]`,
 * S = number of sequence ids (rows when `sequenceIds` is omitted). Differentiable.
 * DPO: `sequenceSums(logps, layout)` is log pi(y|x); RM: `sequenceSums(values * eosMask, ...)`
 * with the mask on the last token reads the reward there (use an action mask of ones).
 */
export function sequenceSums(values: Tensor, layout: TokenLayout): Tensor1D {
  expectShape(values, layout.actionMask.shape, 'values', 'sequenceSums');
  const seg = resolveSegments(layout, 'sequenceSums');
  return tidy(() => segmentSums(mul(values, layout.actionMask), seg));
}

/**
 * Splits per-sequence values `[2P]` laid out as (chosen_0, rejected_0, chosen_1, ...) — RL2
 * packs each preference pair together in this order — into `chosen [P]` and `rejected [P]`.
 */
export function splitPairs(perSequence: Tensor): { chosen: Tensor1D; rejected: Tensor1D } {
  const n = perSequence.shape[0] ?? 0;
  if (perSequence.rank !== 1 || n % 2 !== 0) {
    throw new AlgosError(
      'SHAPE_MISMATCH',
      `splitPairs: expected [2P] values ordered chosen, rejected, chosen, ...; got shape [${perSequence.shape.join(', ')}]`,
    );
  }
  return tidy(() => {
    const pairs = reshape(perSequence, [n / 2, 2]);
    const [chosen, rejected] = unstack(pairs, 1) as [Tensor1D, Tensor1D];
    return { chosen, rejected };
  });
}
