import { loadEnvironment } from '@rl2/rollout';
import type { MetricRecord } from '../metrics/metrics-log.js';
import { type DataParallel, openDataParallel } from '../parallel-model/data-parallel.js';
import { type RunIo, RunSession, type SessionResult } from '../run/run-session.js';
import { openSaveDir, openTokenizer, startEngine } from '../run/run-setup.js';
import { dataMetrics, describeCounts } from '../dataset/data-counts.js';
import { stopOnFailedSteps } from './failed-steps.js';
import { loadPpoPrompts } from './load-ppo-prompts.js';
import { loadPpoCheckpoint } from './ppo-checkpoint.js';
import { type PpoConfig, checkPpoConfig } from './ppo-config.js';
import { openPpoModels } from './ppo-models.js';
import { openPpoRollout } from './ppo-rollout.js';
import { ppoTrainStep } from './ppo-train-step.js';
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
export async function runPpo(
  config: PpoConfig,
  io: RunIo = {},
  dataParallel?: DataParallel,
): Promise<PpoRunResult> {
  checkPpoConfig(config);
  const dp = dataParallel ?? (await openDataParallel());
  try {
    return await trainPpo(config, io, dp);
  } finally {
    if (!dataParallel) await dp.close();
  }
}

async function trainPpo(config: PpoConfig, io: RunIo, dp: DataParallel): Promise<PpoRunResult> {
  const { trainer, rollout: r, actor: a } = config;
  await startEngine(trainer, io);
  const tokenizer = await openTokenizer(
    a.tokenizer_name ?? a.model_name,
    a.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name',
  );
  const prompts = await loadPpoPrompts(
    tokenizer,
    config.data,
    trainer.seed,
    ppoSequenceBudget(config),
  );
  const env = await loadEnvironment(r.env_path, {
    timeoutMs: r.env_timeout_s * 1000,
    workers: r.env_workers,
  });
  const out = io.stdout ?? process.stdout;
  const resumeFrom = openSaveDir(trainer, dp.rank, (line) => out.write(`rl2 ppo: ${line}\n`));
  const saved = resumeFrom ? loadPpoCheckpoint(resumeFrom) : undefined;
  const totalSteps = Math.min(
    trainer.max_steps ?? Number.POSITIVE_INFINITY,
    trainer.n_epochs * Math.max(1, Math.floor(prompts.train.length / r.train_prompts_per_rollout)),
  );
  const models = await openPpoModels(config, dp, totalSteps, resumeFrom, saved);
  const { actor, critic } = models;
  const stream = new PromptStream(prompts.train, config.data.shuffle, trainer.seed, saved?.stream);
  const testPrompts = r.test_prompts_per_rollout
    ? prompts.test.slice(0, r.test_prompts_per_rollout)
    : prompts.test;
  const rollout = await openPpoRollout(config, dp, {
    actor: models.fullActor,
    ...(models.tpActor ? { tpActor: models.tpActor } : {}),
    generationConfig: models.generationConfig,
    tokenizer,
    env,
    stream,
    testPrompts,
    writeActor: models.writeActor,
    out,
  });
  const session = new RunSession({
    trainer,
    config,
    io,
    world: dp,
    totalSteps,
    resumeFrom,
    step: saved?.state.step ?? 0,
  });
  session.say(
    `rl2 ppo: ${prompts.train.length} train / ${prompts.test.length} test ` +
      `prompts, ${r.train_prompts_per_rollout} x ${r.responses_per_prompt} responses per step, ` +
      `${totalSteps} steps, adv.estimator=${config.adv.estimator}, ` +
      `engine ${r.engine}${resumeFrom ? `, resuming from ${resumeFrom} at step ${session.step}` : ''}` +
      (actor.layout.summary ? `, actor: ${actor.layout.summary}` : '') +
      (critic?.layout.summary ? `, critic: ${critic.layout.summary}` : ''),
  );
  for (const line of describeCounts(prompts.counts, () => null)) session.say(`rl2 ppo: ${line}`);
  const counted = dataMetrics(prompts.counts);
  if (counted && !resumeFrom) session.record(counted);
  let lr = saved?.state.lr ?? 0;
  let klCoef = saved?.state.klCoef ?? config.kl.coef;
  const evaluate = () => session.test(() => rollout.evaluate(session.step));
  const save = () =>
    session.save((dir) =>
      models.saveCheckpoint(dir, session.isMain, {
        step: session.step,
        totalSteps,
        lr,
        klCoef,
        stream: stream.state(),
      }),
    );
  // a step where every sample failed counts; past rollout.max_failed_steps, or with the engine gone, the run stops (exit 1)
  const training = stopOnFailedSteps(rollout, {
    maxFailedSteps: r.max_failed_steps,
    log: (line) => session.say(line),
    beforeStop: async () => (session.step > 0 ? save() : undefined),
  });
  const steps: MetricRecord[] = [];
  try {
    if (trainer.test_freq && !resumeFrom) await evaluate();
    while (session.step < totalSteps) {
      const step = session.step;
      const { batch, metrics: rolloutMetrics } = await training.step(step + 1);
      const metrics = new PpoStepMetrics(rolloutMetrics);
      // a step whose groups were all filtered out or failed has nothing to learn from
      if (batch.sequences.length > 0) {
        const trained = await ppoTrainStep(models, batch, config, { step, klCoef }, metrics);
        klCoef = trained.klCoef;
        const syncStart = performance.now();
        if (trained.actorTrained) {
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
