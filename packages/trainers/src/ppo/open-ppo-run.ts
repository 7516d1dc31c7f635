import { loadEnvironment } from '@rl2/rollout';
import { dataMetrics, describeCounts } from '../dataset/data-counts.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { type RunLength, describeLeftOut, runLength } from '../run/run-length.js';
import { type RunIo, RunSession } from '../run/run-session.js';
import { openSaveDir, openTokenizer, startEngine } from '../run/run-setup.js';
import { loadPpoPrompts } from './load-ppo-prompts.js';
import { loadPpoCheckpoint } from './ppo-checkpoint.js';
import type { PpoConfig } from './ppo-config.js';
import { type PpoModels, openPpoModels, ppoModelSections } from './ppo-models.js';
import { type PpoRollout, openPpoRollout } from './ppo-rollout.js';
import { ppoSequenceBudget } from './prompt-budget.js';
import { PromptStream } from './prompt-stream.js';

/** Everything a PPO run's loop works with, opened from its config. */
export interface PpoRun {
  readonly session: RunSession;
  readonly models: PpoModels;
  readonly rollout: PpoRollout;
  readonly stream: PromptStream;
  /** Where the resumed checkpoint left the learning rate and the KL coefficient. */
  readonly resumed?: { readonly lr: number; readonly klCoef?: number };
  /** Closes the rollout, the env and the session and frees the models. */
  close(): Promise<void>;
}

/**
 * The set-up of `rl2 ppo` (RL2's `PPOTrainer.__init__`): the tensor engine, the tokenizer, the
 * prompts (checked against the sequence budget), the env, the save folder (resuming from it
 * when asked), the actor / reference / critic laid out on the ranks, the rollout over the
 * prompt stream, and the run session with its opening lines.
 */
export async function openPpoRun(config: PpoConfig, io: RunIo, dp: DataParallel): Promise<PpoRun> {
  const { trainer, rollout: r } = config;
  await startEngine(config.trainer, io);
  const tokenizer = await openTokenizer(
    config.actor.tokenizer_name ?? config.actor.model_name,
    config.actor.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name',
  );
  const sections = ppoModelSections(config);
  const budget = ppoSequenceBudget(sections.actor, sections.critic);
  const prompts = await loadPpoPrompts(tokenizer, config.data, config.trainer.seed, budget);
  const env = await loadEnvironment(r.env_path, {
    timeoutMs: r.env_timeout_s * 1000,
    workers: r.env_workers,
  });
  const out = io.stdout ?? process.stdout;
  const resumeFrom = openSaveDir(trainer, dp.rank, (line) => out.write(`rl2 ppo: ${line}\n`));
  const saved = resumeFrom ? loadPpoCheckpoint(resumeFrom) : undefined;
  const length = runLength(trainer, prompts.train.length, r.train_prompts_per_rollout);
  const models = await openPpoModels(sections, dp, length.totalSteps, resumeFrom, saved);
  const stream = new PromptStream(prompts.train, config.data.shuffle, trainer.seed, saved?.stream);
  const rollout = await openPpoRollout(
    config.rollout,
    { seed: trainer.seed, saveDir: trainer.save_dir, maxSequenceTokens: budget.budget },
    dp,
    {
      actor: models.fullActor,
      ...(models.tpActor ? { tpActor: models.tpActor } : {}),
      generationConfig: models.generationConfig,
      tokenizer,
      env,
      stream,
      testPrompts: r.test_prompts_per_rollout
        ? prompts.test.slice(0, r.test_prompts_per_rollout)
        : prompts.test,
      writeActor: models.writeActor,
      ...(models.writeActorAdapter ? { writeAdapter: models.writeActorAdapter } : {}),
      out,
    },
  );
  const session = new RunSession({
    trainer,
    config,
    io,
    world: dp,
    totalSteps: length.totalSteps,
    resumeFrom,
    step: saved?.state.step ?? 0,
  });
  sayOpening(session, { rollout: r, adv: config.adv }, { prompts, length, models, resumeFrom });
  return {
    session,
    models,
    rollout,
    stream,
    ...(saved ? { resumed: { lr: saved.state.lr, klCoef: saved.state.klCoef } } : {}),
    close: async () => {
      await rollout.close();
      await env.close?.();
      session.close();
      models.dispose();
    },
  };
}

/** The run's opening lines (data, steps, layouts, what full batches leave out) and its data counts at step 0. */
function sayOpening(
  session: RunSession,
  config: Pick<PpoConfig, 'rollout' | 'adv'>,
  o: {
    prompts: Awaited<ReturnType<typeof loadPpoPrompts>>;
    length: RunLength;
    models: PpoModels;
    resumeFrom?: string;
  },
): void {
  const { rollout: r } = config;
  const { prompts, length, resumeFrom } = o;
  const { actor, critic } = o.models;
  session.say(
    `rl2 ppo: ${prompts.train.length} train / ${prompts.test.length} test ` +
      `prompts, ${r.train_prompts_per_rollout} x ${r.responses_per_prompt} responses per step, ` +
      `${length.totalSteps} steps, adv.estimator=${config.adv.estimator}, ` +
      `engine ${r.engine}${resumeFrom ? `, resuming from ${resumeFrom} at step ${session.step}` : ''}` +
      (actor.layout.summary ? `, actor: ${actor.layout.summary}` : '') +
      (critic?.layout.summary ? `, critic: ${critic.layout.summary}` : ''),
  );
  for (const line of describeCounts(prompts.counts, () => null)) session.say(`rl2 ppo: ${line}`);
  const batchKey = 'rollout.train_prompts_per_rollout';
  const rows = prompts.train.length;
  const leftOut = describeLeftOut(length, rows, 'prompts', batchKey, r.train_prompts_per_rollout);
  if (leftOut) session.say(`rl2 ppo: ${leftOut}`);
  const counted = dataMetrics(prompts.counts);
  if (counted && !resumeFrom) session.record(counted);
}
