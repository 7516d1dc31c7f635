import type { LengthBudget } from '../dataset/fit-lengths.js';
import { microBatchBudget } from '../parallel-model/rank-layout.js';
import type { PpoConfig } from './ppo-config.js';

/**
 * The longest sequence a PPO rollout may grow to: one micro-batch of the actor (and of the
 * critic under adv.estimator=gae), cp_size * tp_size * max_length_per_device tokens each.
 * Prompts are checked against it before step 1 and generation is capped to it, so no
 * trajectory fails to pack mid-run.
 */
export function ppoSequenceBudget(config: PpoConfig): LengthBudget {
  const actor = microBatchBudget(config.actor, 'actor');
  if (config.adv.estimator !== 'gae') return actor;
  const critic = microBatchBudget(config.critic, 'critic');
  return critic.budget < actor.budget ? critic : actor;
}
