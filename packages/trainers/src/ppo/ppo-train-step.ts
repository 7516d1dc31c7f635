import { adaptiveKlCoef } from '@rl2/algos';
import { onHostBackend } from '@rl2/engine';
import type { TrainingBatch, TrainingSequence } from '@rl2/rollout';
import { actorObjective } from './actor-objective.js';
import { criticObjective } from './critic-objective.js';
import type { PerSequence } from './forward-passes.js';
import { computePpoAdvantages } from './ppo-advantages.js';
import type { PpoConfig } from './ppo-config.js';
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

/** Where a PPO step starts: its index (0-based) and the KL coefficient (kl.coef, or its adaptive value). */
export interface PpoStepState {
  readonly step: number;
  readonly klCoef: number;
}

const tokensOf = (sequences: readonly TrainingSequence[]) =>
  sequences.reduce((n, s) => n + s.states.length, 0);

/**
 * Everything a PPO step does after the rollout (RL2's `trainer/ppo.py` step body): the
 * reference, critic and old log-prob passes (`given` ones are not recomputed), advantages,
 * the actor update (from actor.freeze_steps on), the critic update (gae), and, with kl.target,
 * the adaptive KL controller. Adds its metrics to `metrics` (`kl/coef` when kl.coef > 0).
 * Returns the KL coefficient of the next step and whether the actor trained.
 */
export async function ppoTrainStep(
  models: Pick<PpoModels, 'actor' | 'ref' | 'critic'>,
  batch: TrainingBatch,
  config: PpoConfig,
  state: PpoStepState,
  metrics: PpoStepMetrics,
  given: PpoPasses = {},
): Promise<{ klCoef: number; actorTrained: boolean }> {
  const { actor: a, critic: c, kl } = config;
  const { actor, ref, critic } = models;
  const seqs = batch.sequences;
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
  const refLogps = await pass(given.refLogps, ref && (() => ref.computeLogps(seqs, a.temperature)));
  const values = await pass(given.values, critic && (() => critic.computeValues(seqs)));
  const oldLogps = await pass(
    given.oldLogps,
    kl.coef > 0 || a.update_per_rollout > 1
      ? () => actor.computeLogps(seqs, a.temperature)
      : undefined,
  );
  metrics.forwardPasses(tokensOf(seqs), computed, secondsSince(began));

  // a host phase (plain arrays in and out): on a GPU backend it runs on the cpu backend
  const adv = await onHostBackend(() =>
    computePpoAdvantages(batch, { refLogps, oldLogps, values }, config, state.klCoef),
  );
  metrics.kl(adv.kl);

  const actorTrained = state.step >= a.freeze_steps;
  if (actorTrained) {
    const objective = actorObjective(
      actor.trained.model,
      { sequences: seqs, advantages: adv.advantages, oldLogps, refLogps },
      config,
      state.klCoef,
    );
    metrics.update(
      'actor',
      await actor.update(seqs, objective, (state.step - a.freeze_steps) * a.update_per_rollout),
    );
  }
  if (critic && values && adv.returns) {
    const objective = criticObjective(
      critic.trained.model,
      { oldValues: values, returns: adv.returns },
      config,
    );
    metrics.update(
      'critic',
      await critic.update(seqs, objective, state.step * c.update_per_rollout),
    );
  }
  let klCoef = state.klCoef;
  if (kl.coef > 0) metrics.values['kl/coef'] = klCoef;
  if (kl.target !== null && adv.klPerSequence !== undefined) {
    klCoef = adaptiveKlCoef(klCoef, adv.klPerSequence, seqs.length, {
      target: kl.target,
      horizon: kl.horizon,
    });
  }
  return { klCoef, actorTrained };
}
