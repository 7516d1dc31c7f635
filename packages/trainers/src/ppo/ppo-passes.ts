import type { TrainingSequence } from '@rl2/rollout';
import type { PerSequence } from './forward-passes.js';
import type { PpoModels } from './ppo-models.js';
import { type PpoStepMetrics, secondsSince } from './step-metrics.js';

/** The no-gradient passes of a PPO step over the rollout. */
export interface PpoPasses {
  /** Reference log-probs (kl.coef > 0). */
  readonly refLogps?: PerSequence;
  /** Critic values (adv.estimator=gae). */
  readonly values?: PerSequence;
  /** Log-probs of the policy before this step's updates (kl.coef > 0 or update_per_rollout > 1). */
  readonly oldLogps?: PerSequence;
}

const tokensOf = (sequences: readonly TrainingSequence[]) =>
  sequences.reduce((n, s) => n + s.states.length, 0);

/**
 * RL2's passes before the advantages: reference log-probs (with a reference model), critic
 * values (with a critic), and the actor's old log-probs when `oldLogps` (kl.coef > 0 or
 * actor.update_per_rollout > 1), each at actor.temperature; `given` ones are not recomputed.
 * Adds their throughput to `metrics`.
 */
export async function ppoPasses(
  models: Pick<PpoModels, 'actor' | 'ref' | 'critic'>,
  sequences: readonly TrainingSequence[],
  want: { readonly temperature: number; readonly oldLogps: boolean },
  metrics: PpoStepMetrics,
  given: PpoPasses = {},
): Promise<PpoPasses> {
  const { actor, ref, critic } = models;
  const began = performance.now();
  let computed = 0;
  const pass = async <T>(
    have: T | undefined,
    run: (() => Promise<T>) | undefined,
  ): Promise<T | undefined> => {
    if (have !== undefined || run === undefined) return have;
    computed += 1;
    return await run();
  };
  const passes = {
    refLogps: await pass(
      given.refLogps,
      ref && (() => ref.computeLogps(sequences, want.temperature)),
    ),
    values: await pass(given.values, critic && (() => critic.computeValues(sequences))),
    oldLogps: await pass(
      given.oldLogps,
      want.oldLogps ? () => actor.computeLogps(sequences, want.temperature) : undefined,
    ),
  };
  metrics.forwardPasses(tokensOf(sequences), computed, secondsSince(began));
  return passes;
}
