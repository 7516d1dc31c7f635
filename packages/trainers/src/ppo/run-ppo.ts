import { type TrainingSequence, loadEnvironment } from '@rl2/rollout';
import type { MetricRecord } from '../metrics/metrics-log.js';
import { type DataParallel, openDataParallel } from '../parallel-model/data-parallel.js';
import { type RunIo, RunSession, type SessionResult } from '../run/run-session.js';
import { openSaveDir, openTokenizer, startEngine } from '../run/run-setup.js';
import { dataMetrics, describeCounts } from '../dataset/data-counts.js';
import { actorObjective } from './actor-objective.js';
import { criticObjective } from './critic-objective.js';
import { stopOnFailedSteps } from './failed-steps.js';
import { loadPpoPrompts } from './load-ppo-prompts.js';
import { computePpoAdvantages } from './ppo-advantages.js';
import { loadPpoCheckpoint } from './ppo-checkpoint.js';
import type { PpoConfig } from './ppo-config.js';
import { openPpoModels } from './ppo-models.js';
import { openPpoRollout } from './ppo-rollout.js';
import { ppoSequenceBudget } from './prompt-budget.js';
import { PromptStream } from './prompt-stream.js';
import { PpoStepMetrics, secondsSince } from './step-metrics.js';

/** What a finished or interrupted `rl2 ppo` run reports. */
export interface PpoRunResult extends SessionResult {
  /** The metrics of every step this invocation ran. */
  readonly steps: readonly MetricRecord[];
  /** Every evaluation on the test split (`test/reward/mean`, ...), in order. */
  readonly tests: readonly MetricRecord[];
}

/**
 * `rl2 ppo`: RL2's PPO/GRPO trainer (`trainer/ppo.py`). Per step: rollout, reference log-probs
 * (kl.coef > 0), critic values (gae), old log-probs (kl.coef > 0 or update_per_rollout > 1),
 * advantages, actor update (after freeze_steps), critic update (gae), weight sync; then
 * evaluation on the test split every trainer.test_freq steps (and before the first step),
 * checkpoints every save_freq steps and at the end, metrics to JSONL/TensorBoard/report.
 *
 * Under a launcher (`rl2 launch`, torchrun, ...) with W ranks, or with `dataParallel`: every
 * rank holds the whole rollout (sharded over the ranks and gathered, see `openPpoRollout`),
 * computes the same advantages, and the passes and updates are data parallel (each rank its
 * slice of the balanced bins, totals and gradients summed over the ranks; tp/cp/FSDP by
 * actor.* and critic.*). Rank 0 alone writes. With rollout.engine=sglang rank 0 drives the
 * servers and hands every rank the batch; the weights are gathered and written once per update.
 */
export async function runPpo(config: PpoConfig, io: RunIo = {}, dataParallel?: DataParallel): Promise<PpoRunResult> {
  const dp = dataParallel ?? (await openDataParallel());
  try {
    return await trainPpo(config, io, dp);
  } finally {
    if (!dataParallel) await dp.close();
  }
}

const tokensOf = (sequences: readonly TrainingSequence[]) => sequences.reduce((n, s) => n + s.states.length, 0);

async function trainPpo(config: PpoConfig, io: RunIo, dp: DataParallel): Promise<PpoRunResult> {
  const { trainer, rollout: r, actor: a, critic: c, kl } = config;
  await startEngine(trainer, io);
  const tokenizer = await openTokenizer(a.tokenizer_name ?? a.model_name, a.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name');
  const prompts = await loadPpoPrompts(tokenizer, config.data, trainer.seed, ppoSequenceBudget(config));
  const env = await loadEnvironment(r.env_path, { timeoutMs: r.env_timeout_s * 1000, workers: r.env_workers });
  const out = io.stdout ?? process.stdout;
  const resumeFrom = openSaveDir(trainer, dp.rank, (line) => out.write(`rl2 ppo: ${line}\n`));
  const saved = resumeFrom ? loadPpoCheckpoint(resumeFrom) : undefined;
  const totalSteps = Math.min(trainer.max_steps ?? Number.POSITIVE_INFINITY, trainer.n_epochs * Math.max(1, Math.floor(prompts.train.length / r.train_prompts_per_rollout)));
  const models = await openPpoModels(config, dp, totalSteps, resumeFrom, saved);
  const { actor, ref, critic } = models;
  const stream = new PromptStream(prompts.train, config.data.shuffle, trainer.seed, saved?.stream);
  const testPrompts = r.test_prompts_per_rollout ? prompts.test.slice(0, r.test_prompts_per_rollout) : prompts.test;
  const rollout = await openPpoRollout(config, dp, { actor: models.fullActor, generationConfig: models.generationConfig, tokenizer, env, stream, testPrompts, writeActor: models.writeActor, out });
  const session = new RunSession({ trainer, config, io, world: dp, totalSteps, resumeFrom, step: saved?.state.step ?? 0 });
  session.say(
    `rl2 ppo: ${prompts.train.length} train / ${prompts.test.length} test prompts, ${r.train_prompts_per_rollout} x ${r.responses_per_prompt} responses per step, ` +
      `${totalSteps} steps, adv.estimator=${config.adv.estimator}, engine ${r.engine}${resumeFrom ? `, resuming from ${resumeFrom} at step ${session.step}` : ''}` +
      (actor.layout.summary ? `, actor: ${actor.layout.summary}` : '') +
      (critic?.layout.summary ? `, critic: ${critic.layout.summary}` : ''),
  );
  for (const line of describeCounts(prompts.counts, () => null)) session.say(`rl2 ppo: ${line}`);
  const counted = dataMetrics(prompts.counts);
  if (counted && !resumeFrom) session.record(counted);
  let lr = saved?.state.lr ?? 0;
  const evaluate = () => session.test(() => rollout.evaluate(session.step));
  const save = () => session.save((dir) => models.saveCheckpoint(dir, session.isMain, { step: session.step, totalSteps, lr, stream: stream.state() }));
  // a step where every sample failed counts; past rollout.max_failed_steps, or with the engine gone, the run stops (exit 1)
  const training = stopOnFailedSteps(rollout, { maxFailedSteps: r.max_failed_steps, log: (line) => session.say(line), beforeStop: async () => (session.step > 0 ? save() : undefined) });
  const steps: MetricRecord[] = [];
  try {
    if (trainer.test_freq && !resumeFrom) await evaluate();
    while (session.step < totalSteps) {
      const step = session.step;
      const { batch, metrics: rolloutMetrics } = await training.step(step + 1);
      const metrics = new PpoStepMetrics(rolloutMetrics);
      const seqs = batch.sequences;
      // a step whose groups were all filtered out or failed has nothing to learn from
      if (seqs.length > 0) {
        const began = performance.now();
        const refLogps = ref?.computeLogps(seqs, a.temperature);
        const values = critic?.computeValues(seqs);
        const oldLogps = kl.coef > 0 || a.update_per_rollout > 1 ? actor.computeLogps(seqs, a.temperature) : undefined;
        metrics.forwardPasses(tokensOf(seqs), [refLogps, values, oldLogps].filter(Boolean).length, secondsSince(began));

        const adv = computePpoAdvantages(batch, { refLogps, oldLogps, values }, config);
        metrics.kl(adv.kl);

        const actorTrains = step >= a.freeze_steps;
        if (actorTrains) {
          const objective = actorObjective(actor.trained.model, { sequences: seqs, advantages: adv.advantages, oldLogps, refLogps }, config);
          metrics.update('actor', actor.update(seqs, objective, (step - a.freeze_steps) * a.update_per_rollout));
        }
        if (critic && values && adv.returns) {
          const objective = criticObjective(critic.trained.model, { oldValues: values, returns: adv.returns }, config);
          metrics.update('critic', critic.update(seqs, objective, step * c.update_per_rollout));
        }

        const syncStart = performance.now();
        if (actorTrains) {
          models.refreshFullActor();
          await rollout.syncWeights();
        }
        metrics.synced(secondsSince(syncStart));
      }
      lr = metrics.values['actor/lr'] ?? lr;
      steps.push(session.completeStep(metrics.values, metrics.shown(lr)));
      if (session.due(trainer.test_freq)) await evaluate();
      if (session.due(trainer.save_freq)) await save();
      if (session.stopRequested()) {
        await session.interrupt(save);
        break;
      }
    }
    if (!session.interrupted) {
      if (trainer.test_freq) await evaluate();
      await save();
    }
  } finally {
    await rollout.close();
    await env.close?.();
    session.close();
    models.dispose();
  }
  return { ...session.finish(), steps, tests: session.tests };
}
