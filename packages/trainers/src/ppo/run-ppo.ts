import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLaunchEnv } from '@rl2/parallel';
import { createRolloutRunner, loadEnvironment, type RolloutEngine, type RolloutPrompt, type RolloutRunner } from '@rl2/rollout';
import * as tf from '@tensorflow/tfjs-core';
import { stringify } from 'yaml';
import { updateLink } from '../checkpoint/atomic-write.js';
import { checkpointDirName, resolveCheckpoint } from '../checkpoint/resolve-checkpoint.js';
import { TrainersError } from '../errors.js';
import { type DataParallel, openDataParallel } from '../loop/data-parallel.js';
import { modelSaver, openModel, openTokenizer, paramRecord, startEngine, startingWeights } from '../loop/run-setup.js';
import type { RunIo } from '../loop/train-loop.js';
import { type MetricRecord, MetricsLog } from '../metrics/metrics-log.js';
import type { Progress } from '../metrics/progress.js';
import { createProgress } from '../metrics/progress.js';
import { TensorBoardWriter } from '../metrics/tensorboard-writer.js';
import { AdamW } from '../optim/adamw.js';
import { type ScheduleOptions, scheduledLr } from '../optim/cosine-schedule.js';
import { ONE_PROCESS, planRankLayout } from '../parallel-model/rank-layout.js';
import { checkpointOptimizerState, trainModel } from '../parallel-model/trained-model.js';
import { writeReport } from '../report/write-report.js';
import { checkSameRollout } from './check-same-rollout.js';
import { gatherRollout } from './gather-rollout.js';
import { loadPpoPrompts } from './load-ppo-prompts.js';
import { loadPpoCheckpoint, savePpoCheckpoint } from './ppo-checkpoint.js';
import type { PpoConfig } from './ppo-config.js';
import { type PpoModels, type PpoStepInput, ppoStep } from './ppo-step.js';
import { PromptStream } from './prompt-stream.js';
import { createPpoEngine, samplingParams } from './rollout-setup.js';
import type { PpoOptimizer } from './update-model.js';

/** What a finished or interrupted `rl2 ppo` run reports. */
export interface PpoRunResult {
  readonly step: number;
  readonly totalSteps: number;
  readonly interrupted: boolean;
  readonly saveDir: string;
  readonly checkpoint: string;
  /** The metrics of every step this invocation ran. */
  readonly steps: readonly MetricRecord[];
  /** Every evaluation on the test split (`test/reward/mean`, ...), in order. */
  readonly tests: readonly MetricRecord[];
  readonly report?: string;
}

/** Fails early, naming every server, when an SGLang engine is not reachable. */
async function checkEngine(engine: RolloutEngine, r: PpoConfig['rollout']): Promise<void> {
  if (r.engine !== 'sglang') return;
  const health = await engine.health();
  if (health.ok) return;
  const down = health.backends.filter((b) => !b.ok).map((b) => `${b.name}: ${b.error ?? 'unhealthy'}`);
  throw new TrainersError('INVALID_ARGUMENT', `rollout.server_urls: no healthy SGLang server (${down.join('; ')}); start one (e.g. rl2 serve --model PATH) or fix the URLs`);
}

/** `nextPrompts` that hands out `prompts` once, then nothing. */
function once(prompts: RolloutPrompt[]): (n: number) => RolloutPrompt[] {
  let left = prompts;
  return (n) => {
    const out = left.slice(0, n);
    left = left.slice(n);
    return out;
  };
}

/**
 * The training rollout over the ranks. Sharded (RL2): rank r rolls out its contiguous share of
 * the step's prompts with the seeds one process would give them (prompt i of the stream samples
 * with trainer.seed + (i * G + s) * 1000), and the shards are all-gathered so every rank holds
 * the whole batch. Refill and oversampling (rollout.refill, groups_in_flight, partial_rollout)
 * tie a step's prompts to completion order, so then every rank rolls out the whole step and
 * the ranks' batches are checked equal.
 */
function ranksRollout(
  dp: DataParallel,
  r: PpoConfig['rollout'],
  stream: PromptStream,
  seed: number,
  runner: RolloutRunner,
  shardRunner: (share: RolloutPrompt[], seed: number) => RolloutRunner,
): PpoStepInput['runner'] {
  if (dp.size === 1) return runner;
  const shardable = !r.refill && !r.partial_rollout && r.groups_in_flight === null && r.train_prompts_per_rollout >= dp.size;
  if (!shardable) {
    return {
      step: async (k) => {
        const res = await runner.step(k);
        checkSameRollout(dp, res.batch.sequences, k);
        return res;
      },
    };
  }
  return {
    step: async (k) => {
      const before = stream.consumed;
      const prompts = stream.next(r.train_prompts_per_rollout);
      const from = Math.floor((dp.rank * prompts.length) / dp.size);
      const share = prompts.slice(from, Math.floor(((dp.rank + 1) * prompts.length) / dp.size));
      const shard = shardRunner(share, seed + (before + from) * r.responses_per_prompt * 1000);
      try {
        return gatherRollout(dp, await shard.step(k), share.length);
      } finally {
        await shard.close();
      }
    },
  };
}

/** Progress of ranks other than 0: they train silently. */
const SILENT: Progress = { update: () => {}, log: () => {}, stop: () => {} };

const prefixed = (prefix: string, m: object) => Object.fromEntries(Object.entries(m).map(([k, v]) => [`${prefix}/${k}`, v as number]));

/**
 * `rl2 ppo`: RL2's PPO/GRPO loop. Per step (see `ppoStep`): rollout, reference/old log-probs,
 * critic values, advantages, actor and critic updates, weight sync; then evaluation on the
 * test split at temperature 0 every trainer.test_freq steps (and before the first step),
 * checkpoints every save_freq steps and at the end, metrics to JSONL/TensorBoard/report.
 *
 * Under a launcher (`rl2 launch`, torchrun, ...) with W ranks, or with `dataParallel`: every
 * rank rolls out the whole step with the seeds one process would use (checked equal over the
 * ranks), computes the same advantages, and the actor/critic updates are data parallel (each
 * rank its slice of the balanced bins, totals and gradients summed over the ranks; FSDP with
 * sharded AdamW state when `actor.ddp_size` / `critic.ddp_size` is set). Rank 0 alone writes.
 */
export async function runPpo(config: PpoConfig, io: RunIo = {}, dataParallel?: DataParallel): Promise<PpoRunResult> {
  const world = dataParallel?.size ?? readLaunchEnv(process.env).worldSize;
  if (world > 1 && config.rollout.engine === 'sglang') {
    // checked before joining the process group, so a misconfigured launch fails at once on every rank
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rl2 ppo over ${world} ranks supports rollout.engine=embedded only (each rank samples the same seeded batch), not sglang; set rollout.engine=embedded or run rl2 ppo in one process (WORLD_SIZE=${world})`,
    );
  }
  const dp = dataParallel ?? (await openDataParallel());
  try {
    return await ppoOnRanks(config, io, dp);
  } finally {
    if (!dataParallel) await dp.close();
  }
}

async function ppoOnRanks(config: PpoConfig, io: RunIo, dp: DataParallel): Promise<PpoRunResult> {
  const { trainer, rollout: r, actor: a, critic: c } = config;
  const isMain = dp.rank === 0;
  const out = io.stdout ?? process.stdout;
  await startEngine(trainer, io);
  const tokenizerDir = a.tokenizer_name ?? a.model_name;
  const tokenizer = await openTokenizer(tokenizerDir, a.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name');
  const prompts = await loadPpoPrompts(tokenizer, config.data, trainer.seed);
  const env = await loadEnvironment(r.env_path, { timeoutMs: r.env_timeout_s * 1000 });
  const resumeFrom = resolveCheckpoint(trainer.save_dir, trainer.load_ckpt_from);
  const saved = resumeFrom ? loadPpoCheckpoint(resumeFrom) : undefined;

  // the actor and its reference lie on the ranks by actor.{tp,cp,ddp}_size, the critic by critic.*;
  // under tp or FSDP the full actor stays alongside the shards: the engine generates with it
  const useCritic = config.adv.estimator === 'gae';
  const actorLayout = planRankLayout(dp, a, 'actor');
  const criticLayout = useCritic ? planRankLayout(dp, c, 'critic') : ONE_PROCESS;
  const actor = await openModel(startingWeights(a.model_name, resumeFrom), 'actor.model_name');
  const trainedActor = trainModel(actor.model, actorLayout, 'actor', { keepFull: true });
  const ref = config.kl.coef > 0 ? trainModel((await openModel(config.ref_actor.model_name, 'ref_actor.model_name')).model, actorLayout, 'actor') : undefined;
  const critic = useCritic ? trainModel((await openModel(resumeFrom ? join(resumeFrom, 'critic') : c.model_name, 'critic.model_name', { head: 'value' })).model, criticLayout, 'critic') : undefined;
  const models: PpoModels = { actor: trainedActor, ref, critic };

  const stepsPerEpoch = Math.max(1, Math.floor(prompts.train.length / r.train_prompts_per_rollout));
  const totalSteps = Math.min(trainer.max_steps ?? Number.POSITIVE_INFINITY, trainer.n_epochs * stepsPerEpoch);
  const schedule = (m: PpoConfig['actor'] | PpoConfig['critic'], updates: number): ScheduleOptions => ({
    lr: m.lr,
    minLr: m.min_lr,
    warmupRatio: m.warmup_ratio,
    totalSteps: Math.max(1, updates),
    kind: m.scheduler,
  });
  const actorSchedule = schedule(a, (totalSteps - a.freeze_steps) * a.update_per_rollout);
  const criticSchedule = schedule(c, totalSteps * c.update_per_rollout);
  const adamw = (m: PpoConfig['actor'] | PpoConfig['critic']) => ({ betas: m.betas, eps: m.eps, weightDecay: m.weight_decay });
  const actorOptimizer: PpoOptimizer = new AdamW(trainedActor.params, adamw(a));
  const criticOptimizer: PpoOptimizer | undefined = critic ? new AdamW(critic.params, adamw(c)) : undefined;
  if (saved) {
    actorOptimizer.loadState(trainedActor.localOptimizerState(saved.actor));
    if (critic) criticOptimizer?.loadState(critic.localOptimizerState(saved.critic));
  }
  /** After an actor update under tp or FSDP: the full weights the engine generates with, gathered from the shards. */
  const refreshFullActor = () => {
    if (!actorLayout.tp && !trainedActor.sharded) return;
    const full = trainedActor.fullParams();
    for (const [name, t] of full.params) (actor.model.params.get(name) as tf.Variable).assign(t);
    full.dispose();
  };
  const stream = new PromptStream(prompts.train, config.data.shuffle, trainer.seed, saved?.stream);
  let step = saved?.state.step ?? 0;

  const engine = createPpoEngine(r, actor.model, actor.generationConfig, tokenizer);
  await checkEngine(engine, r);
  const runnerOptions = {
    engine,
    env,
    tokenizer,
    nextPrompts: (n: number) => stream.next(n),
    promptsPerStep: r.train_prompts_per_rollout,
    responsesPerPrompt: r.responses_per_prompt,
    maxTurns: r.max_turns,
    sampling: samplingParams(r.train_sampling_params),
    evalSampling: samplingParams(r.test_sampling_params),
    concurrency: r.concurrency,
    // The runner seeds sample s of its g-th launched group with seed + (g * G + s) * 1000; a resumed
    // run continues the numbering where the checkpoint left it, so it samples what an
    // uninterrupted run would have.
    seed: trainer.seed + stream.consumed * r.responses_per_prompt * 1000,
    dynamicFiltering: r.dynamic_filtering,
    refill: r.refill,
    ...(r.max_groups_per_rollout ? { maxGroupsPerStep: Math.max(r.max_groups_per_rollout, r.train_prompts_per_rollout, r.groups_in_flight ?? 0) } : {}),
    ...(r.groups_in_flight ? { groupsInFlight: r.groups_in_flight } : {}),
    partialRollout: r.partial_rollout,
    onSampleError: r.on_sample_error,
    ...(r.save_rollouts && isMain ? { saveDir: join(trainer.save_dir, 'rollouts') } : {}),
    log: (line: string) => {
      if (isMain) out.write(`${line}\n`);
    },
  };
  const runner: RolloutRunner = createRolloutRunner(runnerOptions);
  const rollout = ranksRollout(dp, r, stream, trainer.seed, runner, (share, seed) =>
    createRolloutRunner({
      ...runnerOptions,
      nextPrompts: once(share),
      promptsPerStep: Math.max(1, share.length),
      seed,
      ...(r.save_rollouts ? { saveDir: join(trainer.save_dir, 'rollouts', `rank-${dp.rank}`) } : {}),
      log: (line: string) => out.write(`${line}\n`),
    }),
  );
  const testPrompts = r.test_prompts_per_rollout ? prompts.test.slice(0, r.test_prompts_per_rollout) : prompts.test;

  if (isMain) {
    mkdirSync(trainer.save_dir, { recursive: true });
    writeFileSync(join(trainer.save_dir, 'config.yaml'), stringify(config));
  }
  const metrics = isMain ? new MetricsLog(join(trainer.save_dir, 'metrics.jsonl')) : undefined;
  metrics?.truncateAfter(saved ? step : -1);
  const tb = isMain && trainer.use_tensorboard ? new TensorBoardWriter(join(trainer.save_dir, 'tensorboard')) : undefined;
  const progress = isMain ? createProgress({ total: totalSteps, start: step, mode: trainer.progress, logFreq: trainer.log_freq, stream: out }) : SILENT;
  const say = (line: string) => progress.log(line);
  say(
    `rl2 ppo: ${prompts.train.length} train / ${prompts.test.length} test prompts, ${r.train_prompts_per_rollout} x ${r.responses_per_prompt} responses per step, ` +
      `${totalSteps} steps, adv.estimator=${config.adv.estimator}, engine ${r.engine}${resumeFrom ? `, resuming from ${resumeFrom} at step ${step}` : ''}` +
      (actorLayout.summary ? `, actor: ${actorLayout.summary}` : '') +
      (critic && criticLayout.summary ? `, critic: ${criticLayout.summary}` : ''),
  );
  const record = (values: Record<string, number>) => {
    const rec = { step, time: Date.now() / 1000, ...values } as MetricRecord;
    metrics?.append(rec);
    tb?.addScalars(step, values);
    return rec;
  };

  const tests: MetricRecord[] = [];
  let testedAt = -1;
  const evaluate = async () => {
    if (testPrompts.length === 0 || testedAt === step) return;
    testedAt = step;
    const res = await runner.evaluate(testPrompts, step);
    const { rollout_s: _s, tokens_per_s: _t, groups: _g, carried_groups: _c, filtering_ratio: _f, ...shown } = res.metrics;
    tests.push(record(prefixed('test', shown)));
    say(`evaluation @ step ${step}: reward ${shown['reward/mean'].toFixed(4)} (${testPrompts.length} prompts, temperature ${r.test_sampling_params.temperature}), response length ${shown['response_length/mean'].toFixed(1)}`);
  };
  let checkpoint = resumeFrom ?? '';
  let savedAt = resumeFrom ? step : -1;
  let lr = saved?.state.lr ?? 0;
  // the full actor (kept in step with the shards, see refreshFullActor) is what is saved
  const actorSaver = modelSaver(actor.model, actor.generationConfig, tokenizerDir, a);
  const save = async () => {
    if (savedAt === step) return;
    savedAt = step;
    checkpoint = join(trainer.save_dir, checkpointDirName(step));
    const actorState = checkpointOptimizerState(trainedActor, actorOptimizer, actorLayout, isMain);
    const criticState = criticOptimizer && critic ? checkpointOptimizerState(critic, criticOptimizer, criticLayout, isMain) : undefined;
    const criticFull = critic?.fullParams();
    try {
      if (!isMain || !actorState) return;
      await savePpoCheckpoint(checkpoint, {
        step,
        totalSteps,
        lr,
        stream: stream.state(),
        actorOptimizer: { state: () => actorState },
        ...(criticState ? { criticOptimizer: { state: () => criticState } } : {}),
        saveActor: actorSaver,
        ...(critic && criticFull ? { saveCritic: (dir: string) => modelSaver(critic.model, undefined, tokenizerDir, c)(dir, criticFull.params) } : {}),
      });
    } finally {
      criticFull?.dispose();
    }
    updateLink(trainer.save_dir, 'latest', checkpointDirName(step));
    say(`saved checkpoint ${checkpoint}`);
  };

  const steps: MetricRecord[] = [];
  let interrupted = false;
  try {
    if (trainer.test_freq && !resumeFrom) await evaluate();
    while (step < totalSteps) {
      const res = await ppoStep({
        step,
        config,
        models,
        runner: rollout,
        actorOptimizer,
        criticOptimizer,
        actorLr: (i) => scheduledLr((step - a.freeze_steps) * a.update_per_rollout + i, actorSchedule),
        criticLr: (i) => scheduledLr(step * c.update_per_rollout + i, criticSchedule),
        layouts: { actor: actorLayout, critic: criticLayout },
        syncWeights: async () => {
          refreshFullActor();
          if (r.engine === 'embedded') return engine.flushCache();
          await actorSaver(r.weight_sync_dir);
          await engine.updateWeights(r.weight_sync_dir);
        },
      });
      step += 1;
      lr = res.metrics['actor/lr'] ?? lr;
      const rec = record(res.metrics);
      steps.push(rec);
      progress.update({
        step,
        loss: res.metrics['actor/loss'] ?? 0,
        tokensPerSecond: res.metrics['tokens_per_s/update'] ?? 0,
        lr,
        extra: { reward: res.metrics['train/reward/mean'] },
      });
      io.onStep?.(rec);
      if (trainer.test_freq && step % trainer.test_freq === 0) await evaluate();
      if (trainer.save_freq && step % trainer.save_freq === 0) await save();
      // every rank stops together: an interrupt on any of them stops all
      const aborted = io.signal?.aborted ? 1 : 0;
      if ((dp.size > 1 ? (dp.allReduceSum(Float32Array.of(aborted))[0] as number) : aborted) > 0) {
        interrupted = true;
        await save();
        say(`interrupted at step ${step}/${totalSteps}; resume with trainer.load_ckpt_from=latest`);
        break;
      }
    }
    if (!interrupted) {
      if (trainer.test_freq) await evaluate();
      await save();
    }
  } finally {
    await runner.close();
    progress.stop();
    actorOptimizer.dispose();
    criticOptimizer?.dispose();
    for (const m of [trainedActor, ref, critic]) m?.dispose();
    tf.dispose([...actor.model.params.values()]); // the full actor the engine generated with
  }
  const report = isMain && trainer.report ? writeReport(trainer.save_dir) : undefined;
  if (report) out.write(`report: ${report}\n`);
  return { step, totalSteps, interrupted, saveDir: trainer.save_dir, checkpoint, steps, tests, report };
}
