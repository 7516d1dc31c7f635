import type { LengthBudget } from '../dataset/fit-lengths.js';
import { microBatchBudget } from '../parallel-model/rank-layout.js';
import type { PpoConfig } from './ppo-config.js';

/**
 * The longest sequence a PPO rollout may grow to: one micro-batch of the actor (and of the
 * critic, given under adv.estimator=gae), cp_size * tp_size * max_length_per_device tokens each.
 * Prompts are checked against it before step 1 and generation is capped to it, so no
 * trajectory fails to pack mid-run.
 */
export function ppoSequenceBudget(
  actorSection: PpoConfig['actor'],
  criticSection?: PpoConfig['critic'],
): LengthBudget {
  const actor = microBatchBudget(actorSection, 'actor');
  if (!criticSection) return actor;
  const critic = microBatchBudget(criticSection, 'critic');
  return critic.budget < actor.budget ? critic : actor;
}
