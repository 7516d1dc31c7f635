import {
  type Scalar,
  type Tensor,
  add,
  cast,
  div,
  greater,
  maximum,
  mul,
  neg,
  square,
  sub,
  sum,
  tidy,
} from '@tensorflow/tfjs-core';
import { AlgosError } from './errors.js';
import { expectNumber } from './internal/check.js';
import { logSigmoid } from './internal/log-sigmoid.js';
import { pairDivisor } from './internal/pair-totals.js';
import { stopGradient } from './internal/stop-gradient.js';
import type { LossResult } from './loss-result.js';

/** Per-pair sequence log-probabilities (sum over the response's action tokens), all `[P]`. */
export interface DpoInputs {
  /** [P] log pi_theta(y_chosen | x) (differentiated). */
  readonly chosenLogps: Tensor;
  /** [P] log pi_theta(y_rejected | x) (differentiated). */
  readonly rejectedLogps: Tensor;
  /** [P] log pi_ref(y_chosen | x); required except for SimPO. */
  readonly refChosenLogps?: Tensor;
  /** [P] log pi_ref(y_rejected | x); required except for SimPO. */
  readonly refRejectedLogps?: Tensor;
  /** [P] action-token counts of the chosen responses; required for SimPO and `nllCoef`. */
  readonly chosenLengths?: Tensor;
  /** [P] action-token counts of the rejected responses; required for SimPO. */
  readonly rejectedLengths?: Tensor;
}

/** The preference objectives `dpoLoss` implements. */
export type PreferenceLoss = 'dpo' | 'ipo' | 'simpo';

/** Every valid `PreferenceLoss`. */
export const PREFERENCE_LOSSES: readonly PreferenceLoss[] = ['dpo', 'ipo', 'simpo'];

/** Options of `dpoLoss`. */
export interface DpoOptions {
  /** `dpo` (default), `ipo` or `simpo`. */
  readonly variant?: PreferenceLoss;
  /** beta (default 0.1, RL2's default). */
  readonly beta?: number;
  /** cDPO label smoothing eps in [0, 0.5): the label is flipped with probability eps (default 0). */
  readonly labelSmoothing?: number;
  /** SimPO target margin gamma (default 0.5 * beta, TRL's gamma_beta_ratio 0.5). */
  readonly simpoGamma?: number;
  /** Weight alpha of the chosen responses' per-token NLL added to the loss (RPO; default 0). */
  readonly nllCoef?: number;
  /** Number of pairs in the whole update over all ranks (default P). */
  readonly totalPairs?: number;
}

type DpoMetric = 'rewardsChosen' | 'rewardsRejected' | 'rewardsMargin' | 'accuracy' | 'nllLoss';

/**
 * Direct preference losses over per-pair sequence log-probs. With implicit rewards
 * r = beta * (logp - ref_logp) and h = r_chosen - r_rejected, per pair:
 * - `dpo` (Rafailov et al. 2023, https://arxiv.org/abs/2305.18290) with cDPO label smoothing
 *   eps (Mitchell 2023, https://ericmitchell.ai/cdpo.pdf):
 *   l = -(1 - eps) log sigmoid(h) - eps log sigmoid(-h); eps = 0 is RL2's loss.
 * - `ipo` (Azar et al. 2023, https://arxiv.org/abs/2310.12036): l = (h / beta - 1 / (2 beta))^2,
 *   on summed sequence log-ratios (TRL averages them per token instead).
 * - `simpo` (Meng et al. 2024, https://arxiv.org/abs/2405.14734), no reference model:
 *   r = beta * logp / length, l = -(1 - eps) log sigmoid(h - gamma) - eps log sigmoid(-(h - gamma)).
 * - `nllCoef` alpha > 0 adds alpha * (-logp_chosen / length_chosen) (RPO,
 *   https://arxiv.org/abs/2404.19733).
 * loss = sum over pairs / totalPairs. Metrics (same normalisation): rewardsChosen,
 * rewardsRejected, rewardsMargin, accuracy (h > 0), nllLoss.
 */
export function dpoLoss(inputs: DpoInputs, options: DpoOptions = {}): LossResult<DpoMetric> {
  const fn = 'dpoLoss';
  const variant = options.variant ?? 'dpo';
  if (!PREFERENCE_LOSSES.includes(variant)) {
    throw new AlgosError(
      'UNKNOWN_NAME',
      `${fn}: unknown variant "${variant}"; valid variants: ${PREFERENCE_LOSSES.join(', ')}`,
    );
  }
  const beta = options.beta ?? 0.1;
  expectNumber(beta, (v) => v > 0, 'beta', fn, '> 0');
  const eps = options.labelSmoothing ?? 0;
  expectNumber(eps, (v) => v >= 0 && v < 0.5, 'labelSmoothing', fn, 'in [0, 0.5)');
  const nllCoef = options.nllCoef ?? 0;
  const gamma = options.simpoGamma ?? 0.5 * beta;
  const need = (ok: boolean, key: string, why: string) => {
    if (!ok) throw new AlgosError('INVALID_ARGUMENT', `${fn}: ${why} needs inputs.${key} ([P])`);
  };
  if (variant !== 'simpo') {
    need(inputs.refChosenLogps !== undefined, 'refChosenLogps', `variant ${variant}`);
    need(inputs.refRejectedLogps !== undefined, 'refRejectedLogps', `variant ${variant}`);
  } else {
    need(inputs.chosenLengths !== undefined, 'chosenLengths', 'variant simpo');
    need(inputs.rejectedLengths !== undefined, 'rejectedLengths', 'variant simpo');
  }
  need(
    nllCoef === 0 || inputs.chosenLengths !== undefined,
    'chosenLengths',
    `nllCoef = ${nllCoef}`,
  );
  const d = pairDivisor({ ...inputs }, options.totalPairs, fn);
  const mean = (x: Tensor) => div(sum(stopGradient(x)), d) as Scalar;
  // the metrics leave the tidy with the loss: tracked by the caller's scope, never kept globally
  const { loss, metrics } = tidy(() => {
    const named: Partial<Record<DpoMetric, Scalar>> = {};
    const len = (t: Tensor | undefined) => maximum(cast(t!, 'float32'), 1);
    const rc =
      variant === 'simpo'
        ? mul(div(inputs.chosenLogps, len(inputs.chosenLengths)), beta)
        : mul(sub(inputs.chosenLogps, inputs.refChosenLogps!), beta);
    const rr =
      variant === 'simpo'
        ? mul(div(inputs.rejectedLogps, len(inputs.rejectedLengths)), beta)
        : mul(sub(inputs.rejectedLogps, inputs.refRejectedLogps!), beta);
    const h = sub(rc, rr);
    let losses: Tensor;
    if (variant === 'ipo') {
      losses = square(sub(div(h, beta), 1 / (2 * beta)));
    } else {
      const z = variant === 'simpo' ? sub(h, gamma) : h;
      losses = sub(mul(logSigmoid(z), -(1 - eps)), mul(logSigmoid(neg(z)), eps));
    }
    named.rewardsChosen = mean(rc);
    named.rewardsRejected = mean(rr);
    named.rewardsMargin = mean(h);
    named.accuracy = mean(cast(greater(h, 0), 'float32'));
    if (nllCoef !== 0) {
      const nll = neg(div(inputs.chosenLogps, len(inputs.chosenLengths)));
      named.nllLoss = mean(nll);
      losses = add(losses, mul(nll, nllCoef));
    }
    return { loss: div(sum(losses), d) as Scalar, metrics: named };
  });
  return { loss, metrics };
}
