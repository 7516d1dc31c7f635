import { expectNumber } from './internal/check.js';

/** Options of `adaptiveKlCoef`. */
export interface AdaptiveKlOptions {
  /** Target KL per sequence/step the controller steers towards (e.g. 6). */
  readonly target: number;
  /** Horizon in samples over which the coefficient adapts (e.g. 10000). */
  readonly horizon: number;
}

/**
 * Adaptive KL controller (Ziegler et al. 2019, https://arxiv.org/abs/1909.08593, sec. 2.2):
 *   e = clip(observedKl / target - 1, -0.2, 0.2);  coef' = coef * (1 + e * nSteps / horizon)
 * Pure: give it the current coefficient, get the next one (keep it in your trainer state).
 * `nSteps` is the number of samples (sequences) the KL was measured on.
 */
export function adaptiveKlCoef(
  coef: number,
  observedKl: number,
  nSteps: number,
  options: AdaptiveKlOptions,
): number {
  const fn = 'adaptiveKlCoef';
  expectNumber(coef, (v) => v >= 0, 'coef', fn, '>= 0');
  expectNumber(observedKl, () => true, 'observedKl', fn, 'a finite number');
  expectNumber(nSteps, (v) => v >= 0, 'nSteps', fn, '>= 0');
  expectNumber(options.target, (v) => v > 0, 'target', fn, '> 0');
  expectNumber(options.horizon, (v) => v > 0, 'horizon', fn, '> 0');
  const e = Math.min(Math.max(observedKl / options.target - 1, -0.2), 0.2);
  return coef * (1 + (e * nSteps) / options.horizon);
}
