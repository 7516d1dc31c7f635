import { adaptiveKlCoef } from '@rl2/algos';
import type { TrainingSequence } from '@rl2/rollout';
import { actorObjective } from './actor-objective.js';
import { criticObjective } from './critic-objective.js';
import type { AdvantageOutputs } from './ppo-advantages.js';
import type { PpoConfig } from './ppo-config.js';
import type { PpoModels } from './ppo-models.js';
import type { PpoPasses } from './ppo-passes.js';
import type { PpoStepMetrics } from './step-metrics.js';

/** What a PPO update changed: whether the actor trained, its learning rate, the next KL coefficient. */
export interface PpoUpdated {
  readonly actorTrained: boolean;
  /** The actor's learning rate at its last optimizer step (undefined while actor.freeze_steps holds it). */
  readonly lr?: number;
  /** The KL coefficient of the next step (adapted under kl.target). */
  readonly klCoef: number;
}

/**
 * RL2's `ppo_update` of the actor (from actor.freeze_steps on) and of the critic (with one),
 * then the adaptive KL controller (kl.target). `step` is the step's index (0-based) and
 * `klCoef` its KL coefficient. Adds the updates' metrics to `metrics` (`kl/coef` when
 * kl.coef > 0).
 */
export async function ppoUpdate(
  models: Pick<PpoModels, 'actor' | 'critic'>,
  sequences: readonly TrainingSequence[],
  inputs: { readonly passes: PpoPasses; readonly adv: AdvantageOutputs },
  cfg: Pick<PpoConfig, 'actor' | 'critic' | 'kl' | 'entropy'>,
  state: { readonly step: number; readonly klCoef: number },
  metrics: PpoStepMetrics,
): Promise<PpoUpdated> {
  const { actor: a, kl } = cfg;
  const { actor, critic } = models;
  const { passes, adv } = inputs;
  const actorTrained = state.step >= a.freeze_steps;
  let lr: number | undefined;
  if (actorTrained) {
    const objective = actorObjective(
      actor.trained.model,
      {
        sequences,
        advantages: adv.advantages,
        oldLogps: passes.oldLogps,
        refLogps: passes.refLogps,
      },
      { actor: a, kl, entropy: cfg.entropy },
      state.klCoef,
    );
    const res = await actor.update(
      sequences,
      objective,
      (state.step - a.freeze_steps) * a.update_per_rollout,
    );
    metrics.update('actor', res);
    lr = res.lr;
  }
  if (critic && passes.values && adv.returns) {
    const objective = criticObjective(
      critic.trained.model,
      { oldValues: passes.values, returns: adv.returns },
      cfg.critic,
    );
    metrics.update(
      'critic',
      await critic.update(sequences, objective, state.step * cfg.critic.update_per_rollout),
    );
  }
  let klCoef = state.klCoef;
  if (kl.coef > 0) metrics.values['kl/coef'] = klCoef;
  if (kl.target !== null && adv.klPerSequence !== undefined) {
    klCoef = adaptiveKlCoef(klCoef, adv.klPerSequence, sequences.length, {
      target: kl.target,
      horizon: kl.horizon,
    });
  }
  return { actorTrained, ...(lr !== undefined ? { lr } : {}), klCoef };
}
