import type { Tensor } from '@tensorflow/tfjs-core';
import { LOSS_AGGREGATIONS, type LossAggregation } from './aggregate-loss.js';
import { PREFERENCE_LOSSES, type PreferenceLoss } from './dpo-loss.js';
import { AlgosError } from './errors.js';
import { computeGae } from './gae.js';
import { KL_ESTIMATORS, type KlEstimator } from './kl-estimator.js';
import type { TrajectoryBatch } from './layout.js';
import { computeReinforcePlusPlusAdvantages } from './reinforce-plus-plus.js';
import { computeReinforceAdvantages } from './reinforce.js';
import { computeRlooAdvantages } from './rloo.js';

/** Every option an advantage estimator may read (each ignores the ones it does not use). */
export interface AdvantageConfig {
  readonly gamma?: number;
  readonly lambda?: number;
  readonly responsesPerPrompt?: number;
  readonly globalBaseline?: boolean;
  readonly normVar?: boolean;
  readonly whiten?: boolean;
}

/** An advantage estimator selected by name: `[B, T]` batch in, `[B, T]` advantages out. */
export type AdvantageEstimator = (
  batch: TrajectoryBatch & { readonly values?: Tensor },
  config?: AdvantageConfig,
) => { advantages: Tensor; returns?: Tensor };

/**
 * Advantage estimators by config name (`adv.estimator=<name>`):
 * gae, reinforce (RL2: normVar from config), grpo (reinforce + normVar), dr-grpo (reinforce,
 * no std division), rloo, reinforce++ and reinforce++-baseline.
 */
export const ADVANTAGE_ESTIMATORS: Readonly<Record<string, AdvantageEstimator>> = {
  gae: (batch, c = {}) => {
    if (batch.values === undefined) {
      throw new AlgosError(
        'INVALID_ARGUMENT',
        'adv.estimator=gae needs batch.values ([B, T] critic values); enable the critic or pick reinforce',
      );
    }
    return computeGae({ ...batch, values: batch.values }, c);
  },
  reinforce: (batch, c = {}) => ({ advantages: computeReinforceAdvantages(batch, c) }),
  grpo: (batch, c = {}) => ({
    advantages: computeReinforceAdvantages(batch, { ...c, normVar: true }),
  }),
  'dr-grpo': (batch, c = {}) => ({
    advantages: computeReinforceAdvantages(batch, { ...c, normVar: false }),
  }),
  rloo: (batch, c = {}) => ({ advantages: computeRlooAdvantages(batch, c) }),
  'reinforce++': (batch, c = {}) => ({
    advantages: computeReinforcePlusPlusAdvantages(batch, { ...c, baseline: 'none' }),
  }),
  'reinforce++-baseline': (batch, c = {}) => ({
    advantages: computeReinforcePlusPlusAdvantages(batch, { ...c, baseline: 'group-mean' }),
  }),
};

function unknown(kind: string, name: string, valid: readonly string[]): AlgosError {
  return new AlgosError(
    'UNKNOWN_NAME',
    `unknown ${kind} "${name}"; valid names: ${valid.join(', ')}`,
  );
}

/** Looks up `adv.estimator=<name>`; throws UNKNOWN_NAME listing the valid names. */
export function getAdvantageEstimator(name: string): AdvantageEstimator {
  const found = Object.hasOwn(ADVANTAGE_ESTIMATORS, name) ? ADVANTAGE_ESTIMATORS[name] : undefined;
  if (found === undefined) throw unknown('adv.estimator', name, Object.keys(ADVANTAGE_ESTIMATORS));
  return found;
}

/** RL2's `avg_level` names mapped onto the aggregation modes. */
const AGGREGATION_ALIASES: Readonly<Record<string, LossAggregation>> = {
  token: 'token-mean',
  sequence: 'seq-mean-token-mean',
};

/** Parses a loss aggregation name: the four modes, or RL2's `token` / `sequence` avg_level. */
export function parseLossAggregation(name: string): LossAggregation {
  if ((LOSS_AGGREGATIONS as readonly string[]).includes(name)) return name as LossAggregation;
  const alias = Object.hasOwn(AGGREGATION_ALIASES, name) ? AGGREGATION_ALIASES[name] : undefined;
  if (alias !== undefined) return alias;
  throw unknown('loss aggregation (avg_level / loss_agg_mode)', name, [
    ...LOSS_AGGREGATIONS,
    ...Object.keys(AGGREGATION_ALIASES),
  ]);
}

/** Parses `kl.reward_estimator` / `kl.loss_estimator`: k1, k2 or k3. */
export function parseKlEstimator(name: string): KlEstimator {
  if ((KL_ESTIMATORS as readonly string[]).includes(name)) return name as KlEstimator;
  throw unknown('KL estimator', name, KL_ESTIMATORS);
}

/** Parses a preference loss name: dpo, ipo or simpo. */
export function parsePreferenceLoss(name: string): PreferenceLoss {
  if ((PREFERENCE_LOSSES as readonly string[]).includes(name)) return name as PreferenceLoss;
  throw unknown('preference loss', name, PREFERENCE_LOSSES);
}
