import { onHostBackend } from '@rl2/engine';
import type { MetricRecord } from '../metrics/metrics-log.js';
import { type DataParallel, openDataParallel } from '../parallel-model/data-parallel.js';
import type { RunIo, SessionResult } from '../run/run-session.js';
import { type LoopStep, runSteps } from '../run/step-loop.js';
import { stopOnFailedSteps } from './failed-steps.js';
import { openPpoRun } from './open-ppo-run.js';
import { computePpoAdvantages } from './ppo-advantages.js';
import { type PpoConfig, checkPpoConfig } from './ppo-config.js';
import { ppoPasses } from './ppo-passes.js';
import { ppoUpdate } from './ppo-update.js';
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
 * evaluation on the test split every trainer.test_freq steps (and, with test_freq set, before
 * the first step when trainer.val_before_train and after the last), checkpoints every
 * save_freq steps and at the end, metrics to JSONL/TensorBoard/report.
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
  const run = await openPpoRun(config, io, dp);
  const { session, models, rollout, stream } = run;
  const { trainer, actor: a } = config;
  // the slices of the config the advantage phase and the update read
  const advantageConfig = { kl: config.kl, adv: config.adv };
  const updateConfig = { actor: a, critic: config.critic, kl: config.kl, entropy: config.entropy };
  let lr = run.resumed?.lr ?? 0;
  let klCoef = run.resumed?.klCoef ?? config.kl.coef;
  const evaluate = () => session.test(() => rollout.evaluate(session.step));
  const save = () =>
    session.save((dir) =>
      models.writeCheckpoint(dir, session.isMain, {
        step: session.step,
        totalSteps: session.totalSteps,
        lr,
        klCoef,
        stream: stream.state(),
      }),
    );
  // a step with nothing to train on (every sample failed, or every group filtered) counts; past
  // rollout.max_failed_steps / max_filtered_steps of them in a row, or with the engine gone, the run stops (exit 1)
  const training = stopOnFailedSteps(rollout, {
    maxFailedSteps: config.rollout.max_failed_steps,
    maxFilteredSteps: config.rollout.max_filtered_steps,
    responsesPerPrompt: config.rollout.responses_per_prompt,
    log: (line) => session.say(line),
    beforeStop: async () => (session.step > 0 ? save() : undefined),
  });
  const step = async (): Promise<LoopStep> => {
    const { batch, metrics: rolled } = await training.step(session.step + 1);
    const metrics = new PpoStepMetrics(rolled);
    const seqs = batch.sequences;
    if (seqs.length > 0) {
      const oldLogps = config.kl.coef > 0 || a.update_per_rollout > 1;
      const passes = await ppoPasses(
        models,
        seqs,
        { temperature: a.temperature, oldLogps },
        metrics,
      );
      // a host phase (plain arrays in and out): on a GPU backend it runs on the cpu backend
      const adv = await onHostBackend(() =>
        computePpoAdvantages(batch, passes, advantageConfig, klCoef),
      );
      metrics.kl(adv.kl);
      const updated = await ppoUpdate(
        models,
        seqs,
        { passes, adv },
        updateConfig,
        { step: session.step, klCoef },
        metrics,
      );
      lr = updated.lr ?? lr;
      klCoef = updated.klCoef;
      const syncStart = performance.now();
      if (updated.actorTrained) {
        models.refreshFullActor();
        await rollout.syncWeights();
      }
      metrics.synced(secondsSince(syncStart));
    }
    return { values: metrics.values, shown: metrics.shown(lr), watched: metrics.watched() };
  };
  try {
    const steps = await runSteps({
      session,
      trainer,
      beforeFirstStep: async () =>
        trainer.test_freq && trainer.val_before_train ? evaluate() : undefined,
      step,
      evaluate,
      evaluateAtEnd: async () => (trainer.test_freq ? evaluate() : undefined),
      save,
    });
    return { ...session.finish(), steps, tests: session.tests };
  } finally {
    await run.close();
  }
}
