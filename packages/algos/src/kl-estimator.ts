import { type Tensor, add, div, exp, mul, neg, square, sub, tidy } from '@tensorflow/tfjs-core';
import { AlgosError } from './errors.js';
import { expectShape } from './internal/check.js';

/**
 * Per-token estimators of KL(pi || pi_ref) from samples of pi, on lr = logp - refLogp
 * (Schulman, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html):
 * - `k1` = lr                  unbiased, high variance, can be negative
 * - `k2` = lr^2 / 2            biased, low variance, gradient = gradient of KL
 * - `k3` = exp(-lr) - 1 + lr   unbiased, low variance, never negative (DeepSeek GRPO)
 */
export type KlEstimator = 'k1' | 'k2' | 'k3';

/** Every valid `KlEstimator`. */
export const KL_ESTIMATORS: readonly KlEstimator[] = ['k1', 'k2', 'k3'];

/**
 * Per-token approximate KL. `logps`, `refLogps`: `[B, T]` (any equal shapes); returns the same
 * shape. Differentiable in both inputs. Multiply by the action mask (or aggregate) yourself.
 */
export function approxKl(logps: Tensor, refLogps: Tensor, estimator: KlEstimator = 'k1'): Tensor {
  expectShape(refLogps, logps.shape, 'refLogps', 'approxKl');
  return tidy(() => {
    const lr = sub(logps, refLogps);
    switch (estimator) {
      case 'k1':
        return lr;
      case 'k2':
        return div(square(lr), 2);
      case 'k3':
        return add(sub(exp(neg(lr)), 1), lr);
      default:
        throw new AlgosError(
          'UNKNOWN_NAME',
          `approxKl: unknown KL estimator "${String(estimator)}"; valid estimators: ${KL_ESTIMATORS.join(', ')}`,
        );
    }
  });
}

/** Scales an estimator's output: `coef * kl`, masked. Internal building block of the placements. */
function maskedScaled(kl: Tensor, actionMask: Tensor, coef: number): Tensor {
  return mul(mul(kl, actionMask), coef);
}

/**
 * KL in the reward (OpenAI PPO, `kl.type=reward`, default estimator k1): per-token rewards
 * `[B, T]` minus `coef * KL` on action tokens, applied BEFORE advantages are estimated.
 * https://arxiv.org/abs/2203.02155
 */
export function klPenalizedRewards(
  rewards: Tensor,
  kl: Tensor,
  actionMask: Tensor,
  coef: number,
): Tensor {
  expectShape(kl, rewards.shape, 'kl', 'klPenalizedRewards');
  expectShape(actionMask, rewards.shape, 'actionMask', 'klPenalizedRewards');
  return tidy(() => sub(rewards, maskedScaled(kl, actionMask, coef)));
}

/**
 * KL in the advantage (`kl.type=advantage`): advantages `[B, T]` minus `coef * KL` on action
 * tokens, applied AFTER the estimator (and after whitening).
 */
export function klPenalizedAdvantages(
  advantages: Tensor,
  kl: Tensor,
  actionMask: Tensor,
  coef: number,
): Tensor {
  expectShape(kl, advantages.shape, 'kl', 'klPenalizedAdvantages');
  expectShape(actionMask, advantages.shape, 'actionMask', 'klPenalizedAdvantages');
  return tidy(() => sub(advantages, maskedScaled(kl, actionMask, coef)));
}

/**
 * KL in the loss (`kl.type=loss`, default estimator k2; DeepSeek GRPO uses k3): the per-token
 * term `coef * KL(logps, refLogps)` `[B, T]` that is added to the actor's per-token loss.
 * Differentiable in `logps`. https://arxiv.org/abs/2402.03300
 */
export function klLossTerm(
  logps: Tensor,
  refLogps: Tensor,
  coef: number,
  estimator: KlEstimator = 'k2',
): Tensor {
  return tidy(() => mul(approxKl(logps, refLogps, estimator), coef));
}
