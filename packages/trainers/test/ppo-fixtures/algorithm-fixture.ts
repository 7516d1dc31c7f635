import { onHostBackend } from '@rl2/engine';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { RolloutMetrics, TrainingBatch, TrainingSequence } from '@rl2/rollout';
import * as tf from '@tensorflow/tfjs-core';
import { loadConfig } from '../../src/config/load-config.js';
import { writeRandomCheckpoint } from '../../src/model-init/random-checkpoint.js';
import { SINGLE_PROCESS } from '../../src/parallel-model/data-parallel.js';
import { startEngine } from '../../src/run/run-setup.js';
import type { PerSequence } from '../../src/ppo/forward-passes.js';
import { type PpoConfig, ppoConfigSchema } from '../../src/ppo/ppo-config.js';
import { computePpoAdvantages } from '../../src/ppo/ppo-advantages.js';
import { openPpoModels, ppoModelSections } from '../../src/ppo/ppo-models.js';
import { type PpoPasses, ppoPasses } from '../../src/ppo/ppo-passes.js';
import { ppoUpdate } from '../../src/ppo/ppo-update.js';
import { PpoStepMetrics } from '../../src/ppo/step-metrics.js';
import { QUIET_TRAINER, tinyRun } from './tiny-run.js';

/** Responses per prompt of the fixture batch. */
export const GROUP = 4;
const PROMPT = 2;
/** Response lengths (action tokens) and trajectory rewards of the 2 x 4 fixture trajectories. */
const LENGTHS = [3, 6, 2, 5, 4, 2, 6, 3];
const REWARDS = [1, 0, 0.5, 0, 0.25, 1, 1, 0];

/** Same-shaped tiny Qwen3 checkpoints: the actor (seed 0), the policy that sampled the batch (seed 1), the reference (seed 2). */
function checkpoint(tokenizerDir: string, outDir: string, seed: number): string {
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir,
    outDir,
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    seed,
  });
  return outDir;
}

/** The fixture's hand-built rollout: 2 prompts x 4 responses of varied lengths, the reward on each last token. */
function fixtureBatch(): TrainingBatch {
  let x = 7;
  const token = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return 3 + (x % 30);
  };
  const sequences: TrainingSequence[] = LENGTHS.map((n, i) => {
    const ids = Array.from({ length: PROMPT + n }, token);
    const len = ids.length - 1;
    return {
      states: ids.slice(0, -1),
      actions: ids.slice(1),
      actionMask: Array.from({ length: len }, (_, t) => (t >= PROMPT - 1 ? 1 : 0)),
      eosMask: Array.from({ length: len }, (_, t) => (t === len - 1 ? 1 : 0)),
      positionIds: Array.from({ length: len }, (_, t) => t),
      llmLogps: new Array<number>(len).fill(0),
      rewards: Array.from({ length: len }, (_, t) => (t === len - 1 ? REWARDS[i] : 0)),
      trajectoryId: i,
      promptId: Math.floor(i / GROUP),
    };
  });
  return {
    sequences,
    trajectoryIds: sequences.map((s) => s.trajectoryId),
    responsesPerPrompt: GROUP,
    trajectories: sequences.length,
  };
}

const quietStream = () =>
  new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream;

const NO_ROLLOUT = { rollout_s: 0, tokens_per_s: 0 } as unknown as RolloutMetrics;

/**
 * Shared fixture of the algorithm-key tests: one tiny actor, one batch, and one real PPO step
 * (passes, advantages and update, as `rl2 ppo` runs them after the rollout) per config. The batch was "sampled"
 * by an older policy (another checkpoint), whose log-probs are the old and the engine's ones,
 * so the ratio differs from 1 and clipping, dual-clip, GSPO and TIS have something to act on.
 */
export async function algorithmFixture() {
  const t = tinyRun('algorithm-keys');
  const sampler = checkpoint(t.tokenizer, join(t.dir, 'sampler'), 1);
  const ref = checkpoint(t.tokenizer, join(t.dir, 'ref'), 2);
  const base = [
    ...t.overrides(),
    ...QUIET_TRAINER,
    'actor.max_length_per_device=64',
    'actor.warmup_ratio=0',
    'actor.lr=1e-3',
    `trainer.save_dir=${join(t.dir, 'run')}`,
  ];
  const load = (overrides: readonly string[] = []): PpoConfig =>
    loadConfig(ppoConfigSchema, { overrides: [...base, ...overrides] });
  await startEngine(load().trainer, { stdout: quietStream() });

  const batch = fixtureBatch();
  /** log pi(a_t) of every token under the checkpoint `model` (the trainer's own no-gradient pass). */
  const logpsOf = async (model: string): Promise<PerSequence> => {
    const models = await openPpoModels(
      ppoModelSections(load([`actor.model_name=${model}`])),
      SINGLE_PROCESS,
      1,
    );
    try {
      return await models.actor.computeLogps(batch.sequences, 1);
    } finally {
      models.dispose();
    }
  };
  const old = await logpsOf(sampler);
  batch.sequences.forEach((s, i) => {
    s.llmLogps = [...old[i]];
  });
  const current = await logpsOf(t.model);
  const reference = await logpsOf(ref);

  /** One PPO step of a fresh actor on the batch under `overrides`; returns its metrics and the next KL coefficient. */
  const step = async (overrides: readonly string[] = [], given: PpoPasses = { oldLogps: old }) => {
    const config = load(overrides);
    const models = await openPpoModels(ppoModelSections(config), SINGLE_PROCESS, 1);
    try {
      const metrics = new PpoStepMetrics(NO_ROLLOUT);
      const { actor: a, kl } = config;
      const oldLogps = kl.coef > 0 || a.update_per_rollout > 1;
      const seqs = batch.sequences;
      const passes = await ppoPasses(
        models,
        seqs,
        { temperature: a.temperature, oldLogps },
        metrics,
        given,
      );
      const adv = await onHostBackend(() =>
        computePpoAdvantages(batch, passes, { kl, adv: config.adv }, kl.coef),
      );
      metrics.kl(adv.kl);
      const state = { step: 0, klCoef: kl.coef };
      const updateConfig = { actor: a, critic: config.critic, kl, entropy: config.entropy };
      const out = await ppoUpdate(models, seqs, { passes, adv }, updateConfig, state, metrics);
      return { values: metrics.values, klCoef: out.klCoef, config };
    } finally {
      models.dispose();
    }
  };

  const t0 = Math.max(...batch.sequences.map((s) => s.states.length));
  const pad = (rows: PerSequence) =>
    tf.tensor2d(rows.map((r) => [...r, ...new Array<number>(t0 - r.length).fill(0)]));
  /** `[B, T]` right-padded tensors of the batch for the @rl2/algos reference computations (dispose them, or use inside tidy). */
  const tensors = () => ({
    actionMask: pad(batch.sequences.map((s) => s.actionMask)),
    rewards: pad(batch.sequences.map((s) => s.rewards)),
    trajectoryIds: tf.tensor1d(batch.trajectoryIds, 'int32'),
    logps: pad(current),
    oldLogps: pad(old),
    engineLogps: pad(old),
    refLogps: pad(reference),
  });
  return { batch, old, current, reference, refModel: ref, load, step, tensors, pad };
}
