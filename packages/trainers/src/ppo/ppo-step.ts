import type { TrainedModel } from '../parallel-model/trained-model.js';
import { stepTotals } from '../loop/pack-bins.js';
import { ONE_PROCESS, type RankLayout, microBatchBudget } from '../parallel-model/rank-layout.js';
import { sumTotalsOverRanks } from '../loop/sum-over-ranks.js';
import type { RolloutShard } from './gather-rollout.js';
import { type PerSequence, gatherPerSequence, rolloutLogps, rolloutValues } from './forward-passes.js';
import { computePpoAdvantages } from './ppo-advantages.js';
import type { PpoConfig } from './ppo-config.js';
import { actorObjective } from './actor-objective.js';
import { criticObjective } from './critic-objective.js';
import { packRolloutBins } from './rollout-bins.js';
import { type PpoOptimizer, type UpdateOutcome, updateModel } from './update-model.js';

/** The models of a PPO run as this rank holds them: the actor, the frozen reference (kl.coef > 0) and the critic (gae). */
export interface PpoModels {
  readonly actor: TrainedModel;
  readonly ref?: TrainedModel;
  readonly critic?: TrainedModel;
}

/** Everything one step needs; `step` is the number of steps done before it. */
export interface PpoStepInput {
  readonly step: number;
  readonly config: PpoConfig;
  readonly models: PpoModels;
  /** The training rollout (a RolloutRunner, or the ranks' gathered shards). */
  readonly runner: { step(step: number): Promise<RolloutShard> };
  readonly actorOptimizer: PpoOptimizer;
  readonly criticOptimizer?: PpoOptimizer;
  /** Learning rate of the i-th optimizer step of this rollout. */
  readonly actorLr: (i: number) => number;
  readonly criticLr: (i: number) => number;
  /** Pushes the updated actor to the inference engine. */
  readonly syncWeights: () => Promise<void>;
  /**
   * How the actor (and its reference) and the critic lie on the ranks (default one process).
   * Every rank holds the whole rollout (see runPpo), computes the same advantages, and each
   * data-parallel rank passes and trains on its slice of the bins (tp / cp ranks together).
   */
  readonly layouts?: { readonly actor: RankLayout; readonly critic: RankLayout };
}

const rate = (tokens: number, seconds: number) => tokens / Math.max(seconds, 1e-9);
const prefixed = (prefix: string, m: Record<string, number>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [`${prefix}/${k}`, v]));

/**
 * One PPO/GRPO step, in RL2's order:
 * rollout -> ref logps (kl.coef > 0) -> critic values (gae) -> old logps (kl.coef > 0 or
 * update_per_rollout > 1) -> advantages -> actor update (after freeze_steps) -> critic update
 * (gae) -> weight sync. Returns the step's metrics, flat: `train/*` (rollout), `actor/*`,
 * `critic/*`, `kl/ref`, `tokens_per_s/{rollout,logps,update}`.
 */
export async function ppoStep(input: PpoStepInput): Promise<{ metrics: Record<string, number> }> {
  const { config: cfg, models } = input;
  const { actor: a, critic: c } = cfg;
  const { batch, metrics: rm } = await input.runner.step(input.step + 1);
  const { rollout_s, tokens_per_s, ...rolloutMetrics } = rm;
  const metrics: Record<string, number> = { ...prefixed('train', rolloutMetrics as unknown as Record<string, number>), 'tokens_per_s/rollout': tokens_per_s, 'time/rollout_s': rollout_s };
  const seqs = batch.sequences;
  if (seqs.length === 0) return { metrics }; // every group filtered or failed: nothing to learn from

  // the no-gradient passes are data parallel too: each rank its slice of the bins, then gathered
  const actorLayout = input.layouts?.actor ?? ONE_PROCESS;
  const criticLayout = input.layouts?.critic ?? ONE_PROCESS;
  const dp = actorLayout.data;
  const actorBudget = microBatchBudget(a, 'actor');
  const criticBudget = microBatchBudget(c, 'critic');
  const forwardStart = performance.now();
  const all = seqs.map((_, i) => i);
  // ZeRO-3 passes are collectives: every data-parallel rank runs as many (idle ones included)
  const lockstep = models.actor.sharded || Boolean(models.ref?.sharded);
  const bins = packRolloutBins(seqs, all, actorBudget.budget, actorBudget.budgetKey, dp, lockstep);
  const passTokens = sumTotalsOverRanks(dp, stepTotals(bins)).tokens;
  let passes = 0;
  let refLogps: PerSequence | undefined;
  let oldLogps: PerSequence | undefined;
  let values: PerSequence | undefined;
  if (models.ref && cfg.kl.coef > 0) {
    refLogps = gatherPerSequence(dp, rolloutLogps(models.ref.model, bins, seqs, a.temperature), seqs);
    passes += 1;
  }
  if (models.critic) {
    const criticBins = packRolloutBins(seqs, all, criticBudget.budget, criticBudget.budgetKey, criticLayout.data, models.critic.sharded);
    values = gatherPerSequence(criticLayout.data, rolloutValues(models.critic.model, criticBins, seqs), seqs);
    passes += 1;
  }
  if (cfg.kl.coef > 0 || a.update_per_rollout > 1) {
    oldLogps = gatherPerSequence(dp, rolloutLogps(models.actor.model, bins, seqs, a.temperature), seqs);
    passes += 1;
  }
  const forwardSeconds = (performance.now() - forwardStart) / 1000;
  if (passes > 0) metrics['tokens_per_s/logps'] = rate(passTokens * passes, forwardSeconds);

  const adv = computePpoAdvantages(batch, { refLogps, oldLogps, values }, cfg);
  if (adv.kl !== undefined) metrics['kl/ref'] = adv.kl;

  let updateTokens = 0;
  let updateSeconds = 0;
  const note = (prefix: string, res: UpdateOutcome, lr: number) => {
    Object.assign(metrics, prefixed(prefix, { loss: res.loss, grad_norm: res.gradNorm, lr, ...res.metrics }));
    updateTokens += res.tokens;
    updateSeconds += res.seconds;
  };
  if (input.step >= a.freeze_steps) {
    const res = updateModel({
      sequences: seqs,
      updatePerRollout: a.update_per_rollout,
      ...actorBudget,
      objective: actorObjective(models.actor.model, { sequences: seqs, advantages: adv.advantages, oldLogps, refLogps }, cfg),
      trained: models.actor,
      optimizer: input.actorOptimizer,
      maxGradNorm: a.max_grad_norm,
      lr: input.actorLr,
      layout: actorLayout,
    });
    note('actor', res, input.actorLr(a.update_per_rollout - 1));
  }
  if (models.critic && input.criticOptimizer && values && adv.returns) {
    const res = updateModel({
      sequences: seqs,
      updatePerRollout: c.update_per_rollout,
      ...criticBudget,
      objective: criticObjective(models.critic.model, { oldValues: values, returns: adv.returns }, cfg),
      trained: models.critic,
      optimizer: input.criticOptimizer,
      maxGradNorm: c.max_grad_norm,
      lr: input.criticLr,
      layout: criticLayout,
    });
    note('critic', res, input.criticLr(c.update_per_rollout - 1));
  }
  if (updateSeconds > 0) metrics['tokens_per_s/update'] = rate(updateTokens, updateSeconds);
  const syncStart = performance.now();
  if (input.step >= a.freeze_steps) await input.syncWeights();
  metrics['time/sync_s'] = (performance.now() - syncStart) / 1000;
  return { metrics };
}
