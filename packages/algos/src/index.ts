export { AlgosError } from './errors.js';
export type { AlgosErrorCode } from './errors.js';
export type { GlobalTotals, TokenLayout, TrajectoryBatch } from './layout.js';
export type { LossResult } from './loss-result.js';
export { readMetrics } from './read-metrics.js';

export {
  KL_ESTIMATORS,
  approxKl,
  klLossTerm,
  klPenalizedAdvantages,
  klPenalizedRewards,
} from './kl-estimator.js';
export type { KlEstimator } from './kl-estimator.js';
export { adaptiveKlCoef } from './adaptive-kl.js';
export type { AdaptiveKlOptions } from './adaptive-kl.js';

export { computeGae } from './gae.js';
export type { GaeOptions } from './gae.js';
export { whitenAdvantages } from './whiten-advantages.js';
export { computeReinforceAdvantages } from './reinforce.js';
export type { ReinforceOptions } from './reinforce.js';
export { computeRlooAdvantages } from './rloo.js';
export type { RlooOptions } from './rloo.js';
export { computeReinforcePlusPlusAdvantages } from './reinforce-plus-plus.js';
export type { ReinforcePlusPlusOptions } from './reinforce-plus-plus.js';

export {
  LOSS_AGGREGATIONS,
  aggregateLoss,
  aggregationWeights,
  countTotals,
} from './aggregate-loss.js';
export type { AggregationOptions, LossAggregation } from './aggregate-loss.js';
export { actorPpoLoss } from './actor-ppo-loss.js';
export type { ActorPpoInputs, ActorPpoMetric, ActorPpoOptions } from './actor-ppo-loss.js';
export { criticValueLoss } from './critic-value-loss.js';
export type { CriticValueInputs, CriticValueOptions } from './critic-value-loss.js';
export { bradleyTerryLoss } from './bradley-terry-loss.js';
export type { PairScores } from './bradley-terry-loss.js';
export { PREFERENCE_LOSSES, dpoLoss } from './dpo-loss.js';
export type { DpoInputs, DpoOptions, PreferenceLoss } from './dpo-loss.js';
export { sftLoss } from './sft-loss.js';
export { sequenceSums, splitPairs } from './sequence-sums.js';

export {
  ADVANTAGE_ESTIMATORS,
  getAdvantageEstimator,
  parseKlEstimator,
  parseLossAggregation,
  parsePreferenceLoss,
} from './registry.js';
export type { AdvantageConfig, AdvantageEstimator } from './registry.js';
