import {
  type Scalar,
  type Tensor,
  add,
  cast,
  clipByValue,
  div,
  exp,
  greater,
  less,
  logicalAnd,
  maximum,
  minimum,
  mul,
  neg,
  scalar,
  sub,
  sum,
  tidy,
  where,
} from '@tensorflow/tfjs-core';
import { type AggregationOptions, aggregationWeights } from './aggregate-loss.js';
import { AlgosError } from './errors.js';
import { expectNumber, expectShape } from './internal/check.js';
import { broadcastToTokens, resolveSegments, segmentSums } from './internal/segments.js';
import { stopGradient } from './internal/stop-gradient.js';
import { type KlEstimator, approxKl } from './kl-estimator.js';
import type { TokenLayout } from './layout.js';
import type { LossResult } from './loss-result.js';

/** Per-token inputs of `actorPpoLoss`, all `[B, T]` in the `TokenLayout`. */
export interface ActorPpoInputs extends TokenLayout {
  /** [B, T] log pi_theta(a_t) of the current policy (the tensor you differentiate). */
  readonly logps: Tensor;
  /** [B, T] log-probs of the policy that sampled the data. Default: logps with the gradient stopped (ratio 1). */
  readonly oldLogps?: Tensor;
  /** [B, T] advantages (constants). */
  readonly advantages: Tensor;
  /** [B, T] log-probs reported by the inference engine (needed for `tisCoef`; adds the engineApproxKl metric). */
  readonly engineLogps?: Tensor;
  /** [B, T] reference-policy log-probs (needed when `kl.coef > 0`). */
  readonly refLogps?: Tensor;
  /** [B, T] per-token entropy of the current policy (needed when `entropyCoef != 0`; adds the entropy metric). */
  readonly entropy?: Tensor;
}

/** Options of `actorPpoLoss` (RL2 `actor.*`). */
export interface ActorPpoOptions {
  /** Symmetric ratio clip epsilon (default 0.2). */
  readonly clip?: number;
  /** Lower epsilon, ratio >= 1 - clipLow (DAPO clip-low; default `clip`). */
  readonly clipLow?: number;
  /** Upper epsilon, ratio <= 1 + clipHigh (DAPO clip-higher, e.g. 0.28; default `clip`). */
  readonly clipHigh?: number;
  /** Dual-clip constant c > 1: for A < 0 the loss is capped at -c * A (default off). */
  readonly dualClip?: number;
  /** `token` (PPO) or `sequence` (GSPO: length-normalised sequence ratio). Default `token`. */
  readonly ratioLevel?: 'token' | 'sequence';
  /** Truncated importance sampling cap: multiply by min(exp(logp - engineLogp), tisCoef). 0 = off (default). */
  readonly tisCoef?: number;
  /** Entropy bonus coefficient (default 0). */
  readonly entropyCoef?: number;
  /** KL in the loss: adds coef * KL(logps, refLogps) per token (default off; estimator default k2). */
  readonly kl?: { readonly coef: number; readonly estimator?: KlEstimator };
  /** How per-token losses are averaged (default token-mean over this batch). */
  readonly aggregation?: AggregationOptions;
}

/** Metrics of `actorPpoLoss`, aggregated like the loss. */
export type ActorPpoMetric =
  | 'pgLoss'
  | 'clipFraction'
  | 'dualClipFraction'
  | 'approxKl'
  | 'engineApproxKl'
  | 'klLoss'
  | 'entropy';

/**
 * Clipped-surrogate actor loss (PPO, Schulman et al. 2017, https://arxiv.org/abs/1707.06347):
 *   r_t = exp(logp_t - old_t);  l_t = -min(A_t r_t, A_t clip(r_t, 1 - eps_low, 1 + eps_high))
 * - decoupled eps_low / eps_high: DAPO, https://arxiv.org/abs/2503.14476
 * - dual clip, for A_t < 0: l_t = min(l_t, -c A_t): Ye et al. 2020, https://arxiv.org/abs/1912.09729
 * - `ratioLevel: 'sequence'`: GSPO, https://arxiv.org/abs/2507.18071, the ratio of a token is
 *   s_i = exp(mean over the sequence's action tokens of (logp - old)) in value, with gradient
 *   s_i * grad logp_t (GSPO-token form: sg[s_i] * pi / sg[pi]); pair with seq-mean-token-mean.
 * - `kl.coef > 0`: l_t += coef * KL_t (`kl.type=loss`)
 * - `tisCoef > 0`: l_t *= min(exp(sg[logp_t] - engine_t), tisCoef), truncated importance
 *   sampling against the engine's log-probs, https://fengyao.notion.site/off-policy-rl
 * - l_t -= entropyCoef * H_t
 * then aggregated (`aggregateLoss`). Metrics: clipFraction (share of tokens whose objective was
 * clipped), dualClipFraction, approxKl = k3 KL(old || current), engineApproxKl = k3
 * KL(engine || old), klLoss = mean KL to the reference, entropy, pgLoss (the clipped term alone).
 */
export function actorPpoLoss(
  inputs: ActorPpoInputs,
  options: ActorPpoOptions = {},
): LossResult<ActorPpoMetric> {
  const fn = 'actorPpoLoss';
  const shape = inputs.actionMask.shape;
  for (const key of [
    'logps',
    'oldLogps',
    'advantages',
    'engineLogps',
    'refLogps',
    'entropy',
  ] as const) {
    const t = inputs[key];
    if (t !== undefined) expectShape(t, shape, key, fn);
  }
  const clip = options.clip ?? 0.2;
  const clipLow = options.clipLow ?? clip;
  const clipHigh = options.clipHigh ?? clip;
  expectNumber(clipLow, (v) => v >= 0 && v < 1, 'clipLow', fn, 'in [0, 1)');
  expectNumber(clipHigh, (v) => v >= 0, 'clipHigh', fn, '>= 0');
  if (options.dualClip !== undefined)
    expectNumber(options.dualClip, (v) => v > 1, 'dualClip', fn, '> 1 (e.g. 3)');
  const tisCoef = options.tisCoef ?? 0;
  expectNumber(
    tisCoef,
    (v) => v >= 0,
    'tisCoef',
    fn,
    '>= 0 (0 turns truncated importance sampling off)',
  );
  const klCoef = options.kl?.coef ?? 0;
  const entropyCoef = options.entropyCoef ?? 0;
  const need = (ok: boolean, key: string, why: string) => {
    if (!ok)
      throw new AlgosError(
        'INVALID_ARGUMENT',
        `${fn}: ${why} needs inputs.${key} ([B, T]); pass it or turn the option off`,
      );
  };
  need(tisCoef === 0 || inputs.engineLogps !== undefined, 'engineLogps', `tisCoef = ${tisCoef}`);
  need(klCoef === 0 || inputs.refLogps !== undefined, 'refLogps', `kl.coef = ${klCoef}`);
  need(
    entropyCoef === 0 || inputs.entropy !== undefined,
    'entropy',
    `entropyCoef = ${entropyCoef}`,
  );
  // one set of per-token weights serves the loss and every metric
  const weights = aggregationWeights(inputs, options.aggregation);
  const agg = (x: Tensor) => sum(mul(x, weights)) as Scalar;

  // the metrics leave the tidy with the loss: tracked by the caller's scope, never kept globally
  const { loss, metrics } = tidy(() => {
    const named: Partial<Record<ActorPpoMetric, Scalar>> = {};
    const { logps, advantages: adv, actionMask } = inputs;
    const old = inputs.oldLogps ?? stopGradient(logps);
    let logRatio = sub(logps, old);
    if (options.ratioLevel === 'sequence') {
      const seg = resolveSegments(inputs, fn);
      const counts = maximum(segmentSums(actionMask, seg), scalar(1));
      const seqMean = div(segmentSums(mul(stopGradient(logRatio), actionMask), seg), counts);
      logRatio = add(broadcastToTokens(seqMean, seg), sub(logps, stopGradient(logps)));
    }
    const ratio = exp(logRatio);
    const pg1 = neg(mul(adv, ratio));
    const pg2 = neg(mul(adv, clipByValue(ratio, 1 - clipLow, 1 + clipHigh)));
    let losses = maximum(pg1, pg2);
    named.clipFraction = agg(cast(greater(pg2, pg1), 'float32'));
    if (options.dualClip !== undefined) {
      const cap = mul(neg(adv), options.dualClip);
      const capped = logicalAnd(less(adv, 0), greater(losses, cap));
      named.dualClipFraction = agg(cast(capped, 'float32'));
      losses = where(less(adv, 0), minimum(losses, cap), losses);
    }
    named.pgLoss = agg(stopGradient(losses));
    named.approxKl = agg(approxKl(stopGradient(old), stopGradient(logps), 'k3'));
    if (inputs.engineLogps !== undefined) {
      named.engineApproxKl = agg(approxKl(inputs.engineLogps, stopGradient(old), 'k3'));
    }
    if (klCoef !== 0) {
      const kl = approxKl(logps, inputs.refLogps!, options.kl?.estimator ?? 'k2');
      named.klLoss = agg(stopGradient(kl));
      losses = add(losses, mul(kl, klCoef));
    }
    if (tisCoef > 0) {
      const tis = minimum(exp(sub(stopGradient(logps), inputs.engineLogps!)), tisCoef);
      losses = mul(losses, tis);
    }
    if (inputs.entropy !== undefined) {
      named.entropy = agg(stopGradient(inputs.entropy));
      if (entropyCoef !== 0) losses = sub(losses, mul(inputs.entropy, entropyCoef));
    }
    return { loss: agg(losses), metrics: named };
  });
  weights.dispose();
  return { loss, metrics };
}
