import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';
import { runPpo } from './run-ppo.js';
import { QUIET_TRAINER, tinyRun } from '../../test/ppo-fixtures/tiny-run.js';
import { Writable } from 'node:stream';
import * as tf from '@tensorflow/tfjs-core';

const quiet = () => {
  const chunks: string[] = [];
  const stream = new Writable({
    write: (c, _e, cb) => {
      chunks.push(String(c));
      cb();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
};
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

describe('runPpo on a tiny model', () => {
  it('GRPO raises the reward of a trivially learnable env (share of digits generated)', async () => {
    const t = tinyRun('learns');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        ...t.overrides(),
        'rollout.train_prompts_per_rollout=4',
        'rollout.responses_per_prompt=8',
        'rollout.train_sampling_params.max_new_tokens=4',
        'adv.estimator=grpo',
        'actor.lr=5e-2',
        'actor.warmup_ratio=0',
        'actor.scheduler=constant',
        'actor.max_length_per_device=256',
        'trainer.n_epochs=8',
        'trainer.test_freq=8',
        `trainer.save_dir=${join(t.dir, 'run')}`,
        'trainer.progress=lines',
        'trainer.threads=1',
        'trainer.use_tensorboard=false',
        'trainer.report=false',
      ],
    });
    const out = quiet();
    const live: number[] = [];
    const res = await runPpo(config, {
      stdout: out.stream,
      onStep: () => live.push(tf.memory().numTensors),
    });
    expect(res.step).toBe(16);
    // no tensor leaks from step to step (rollout, log-prob passes, updates, evaluation)
    expect(new Set(live.slice(1)).size, live.join(' ')).toBe(1);
    const rewards = res.steps.map((s) => s['train/reward/mean']);
    expect(mean(rewards.slice(-3)), rewards.map((r) => r.toFixed(3)).join(' ')).toBeGreaterThan(
      mean(rewards.slice(0, 3)) + 0.4,
    );
    const before = res.tests[0]['test/reward/mean'];
    const after = res.tests.at(-1)?.['test/reward/mean'] ?? 0;
    expect(res.tests.map((r) => r.step)).toEqual([0, 8, 16]);
    expect(after, `test reward ${before} -> ${after}`).toBeGreaterThan(before);
    expect(after).toBeGreaterThan(0.9);
    for (const key of [
      'actor/clipFraction',
      'actor/entropy',
      'train/filtering_ratio',
      'tokens_per_s/rollout',
      'tokens_per_s/update',
    ]) {
      expect(Number.isFinite(res.steps[0][key]), key).toBe(true);
    }
    expect(existsSync(join(t.dir, 'run', 'step-16', 'model', 'model.safetensors'))).toBe(true);
    expect(
      readFileSync(join(t.dir, 'run', 'rollouts', 'step-1.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean),
    ).toHaveLength(32);
  });
});

describe('runPpo with a critic (OpenAI PPO recipe)', () => {
  it('GAE + KL in the reward + 2 updates per rollout + a frozen first step: learns, trains the critic, resumes', async () => {
    const t = tinyRun('gae');
    const saveDir = join(t.dir, 'run');
    const overrides = (extra: string[] = []) => [
      ...t.overrides(),
      'rollout.train_prompts_per_rollout=4',
      'rollout.responses_per_prompt=4',
      'rollout.train_sampling_params.max_new_tokens=4',
      'adv.estimator=gae',
      'kl.type=reward',
      'kl.coef=0.01',
      'actor.update_per_rollout=2',
      'actor.freeze_steps=1',
      'actor.lr=5e-2',
      'critic.lr=1e-2',
      'actor.warmup_ratio=0',
      'critic.warmup_ratio=0',
      'actor.scheduler=constant',
      'actor.max_length_per_device=256',
      'trainer.n_epochs=6',
      'trainer.save_freq=6',
      `trainer.save_dir=${saveDir}`,
      ...QUIET_TRAINER,
      ...extra,
    ];
    const res = await runPpo(loadConfig(ppoConfigSchema, { overrides: overrides() }), {
      stdout: quiet().stream,
    });
    expect(res.step).toBe(12);
    const first = res.steps[0];
    expect(first['actor/loss'], 'actor frozen at step 1').toBeUndefined();
    expect(Number.isFinite(first['critic/valueError'])).toBe(true);
    expect(Number.isFinite(first['kl/ref'])).toBe(true);
    expect(res.steps[1]['actor/approxKl']).toBeGreaterThanOrEqual(0);
    // the value head starts at zero (a causal LM loaded as a critic): its updates must move it
    const trained = res.steps.filter((s) => s['critic/grad_norm'] !== undefined);
    expect(trained.length).toBeGreaterThan(6);
    for (const s of trained) expect(s['critic/grad_norm']).toBeGreaterThan(0);
    const rewards = res.steps.map((s) => s['train/reward/mean']);
    expect(mean(rewards.slice(-3)), rewards.map((r) => r.toFixed(3)).join(' ')).toBeGreaterThan(
      mean(rewards.slice(0, 3)),
    );
    expect(existsSync(join(saveDir, 'step-6', 'critic', 'model.safetensors'))).toBe(true);

    // resume from step 6: continues to 12 with the critic and both optimizers restored
    const resumed = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: overrides([
          'trainer.load_ckpt_from=' + join(saveDir, 'step-6'),
          `trainer.save_dir=${join(t.dir, 'resumed')}`,
        ]),
      }),
      { stdout: quiet().stream },
    );
    expect(resumed.steps.map((s) => s.step)).toEqual([7, 8, 9, 10, 11, 12]);
  });
});

describe('runPpo on a multi-turn env', () => {
  it('merges the tool turn into one sequence with the env tokens masked, rewards the last action token, and learns', async () => {
    const t = tinyRun('tool');
    const saveDir = join(t.dir, 'run');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        ...t.overrides(t.toolEnv),
        'rollout.max_turns=3',
        'rollout.train_prompts_per_rollout=4',
        'rollout.responses_per_prompt=8',
        'rollout.train_sampling_params.max_new_tokens=3',
        'rollout.train_sampling_params.stop=["<"]',
        'actor.lr=5e-2',
        'actor.scheduler=constant',
        'actor.warmup_ratio=0',
        'trainer.n_epochs=6',
        `trainer.save_dir=${saveDir}`,
        ...QUIET_TRAINER,
      ],
    });
    const res = await runPpo(config, { stdout: quiet().stream });
    expect(res.steps.every((s) => s['train/turns/mean'] === 2)).toBe(true);
    const rewards = res.steps.map((s) => s['train/reward/mean']);
    expect(mean(rewards.slice(-3)), rewards.map((r) => r.toFixed(3)).join(' ')).toBeGreaterThan(
      mean(rewards.slice(0, 3)) + 0.2,
    );

    const first = JSON.parse(
      readFileSync(join(saveDir, 'rollouts', 'step-1.jsonl'), 'utf8').split('\n')[0],
    ) as {
      prompt: string;
      answer: number;
      sequences: { tokenIds: number[]; actionMask: number[]; rewards: number[] }[];
      turns: { action: string; actionTokens: number; next: string }[];
    };
    expect(first.sequences).toHaveLength(1);
    expect(first.turns[0].next).toBe('merge');
    const [seq] = first.sequences;
    const promptLen = first.prompt.length; // one id per character in the test tokenizer
    const [a1, a2] = [first.turns[0].actionTokens, first.turns[1].actionTokens];
    const observation = '<fig>7</fig>'.length;
    expect(seq.tokenIds).toHaveLength(promptLen + a1 + observation + a2);
    const expectedMask = [
      ...new Array(promptLen).fill(0),
      ...new Array(a1).fill(1),
      ...new Array(observation).fill(0),
      ...new Array(a2).fill(1),
    ];
    expect(seq.actionMask).toEqual(expectedMask);
    // turn rewards sit on each turn's last action token: 0 for the tool call, the digit share at the end
    expect(seq.rewards.filter((r, i) => r !== 0 && i !== seq.rewards.length - 1)).toEqual([]);
  });
});

describe('runPpo resume', () => {
  it('an interrupted and resumed run samples and trains exactly as an uninterrupted one', async () => {
    const t = tinyRun('resume');
    const overrides = (saveDir: string, extra: string[] = []) => [
      ...t.overrides(),
      'rollout.train_prompts_per_rollout=4',
      'rollout.responses_per_prompt=4',
      'rollout.train_sampling_params.max_new_tokens=4',
      'actor.lr=3e-2',
      'actor.warmup_ratio=0.25',
      'trainer.n_epochs=2',
      `trainer.save_dir=${saveDir}`,
      ...QUIET_TRAINER,
      ...extra,
    ];
    const full = await runPpo(
      loadConfig(ppoConfigSchema, { overrides: overrides(join(t.dir, 'full')) }),
      { stdout: quiet().stream },
    );
    const parted = join(t.dir, 'parted');
    const controller = new AbortController();
    const first = await runPpo(loadConfig(ppoConfigSchema, { overrides: overrides(parted) }), {
      stdout: quiet().stream,
      signal: controller.signal,
      onStep: (r) => r.step === 2 && controller.abort(),
    });
    expect(first.interrupted).toBe(true);
    expect(first.step).toBe(2);
    const rest = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: overrides(parted, ['trainer.load_ckpt_from=latest']),
      }),
      { stdout: quiet().stream },
    );
    expect(full.steps).toHaveLength(4);
    // `save_dir/latest` points at the newest step, usable as a model path (rl2 serve, SFT -> PPO).
    expect(readlinkSync(join(parted, 'latest'))).toBe('step-4');
    expect(existsSync(join(parted, 'latest', 'model', 'config.json'))).toBe(true);
    const resumed = [...first.steps, ...rest.steps];
    expect(resumed.map((s) => s.step)).toEqual([1, 2, 3, 4]);
    for (const [i, s] of full.steps.entries()) {
      for (const key of [
        'train/reward/mean',
        'train/response_length/mean',
        'actor/loss',
        'actor/grad_norm',
        'actor/lr',
      ]) {
        expect(resumed[i][key], `step ${s.step} ${key}`).toBeCloseTo(s[key], 6);
      }
    }
  });
});

describe('runPpo with the DeepSeek GRPO recipe, TIS and an entropy bonus', () => {
  it("recomputed log-probs match the engine's at sampling temperature; KL in the loss and TIS are applied", async () => {
    const t = tinyRun('recipe');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        ...t.overrides(),
        'rollout.train_prompts_per_rollout=4',
        'rollout.responses_per_prompt=4',
        'rollout.train_sampling_params.max_new_tokens=4',
        'rollout.train_sampling_params.temperature=0.7',
        'rollout.dynamic_filtering=false',
        'actor.avg_level=sequence',
        'kl.type=loss',
        'kl.coef=0.1',
        'kl.loss_estimator=k3',
        'adv.norm_var=true',
        'actor.tis_coef=2',
        'entropy.coef=0.01',
        'actor.lr=1e-2',
        'trainer.max_steps=2',
        `trainer.save_dir=${join(t.dir, 'run')}`,
        ...QUIET_TRAINER,
      ],
    });
    const res = await runPpo(config, { stdout: quiet().stream });
    const [first, second] = res.steps;
    // same weights, same temperature: the trainer's log-probs of the sampled tokens are the engine's
    expect(Math.abs(first['actor/engineApproxKl'])).toBeLessThan(1e-5);
    // the reference is the initial actor: KL 0 before the first update, positive after it
    expect(first['actor/klLoss']).toBeCloseTo(0, 6);
    expect(second['actor/klLoss']).toBeGreaterThan(0);
    // kl/ref is the k1 estimate mean(old - ref) over the (at most 64) sampled tokens: unbiased for a KL >= 0
    // but itself of either sign, so only its moving off 0 is checked (k3 in the loss is >= 0)
    expect(first['kl/ref']).toBeCloseTo(0, 6);
    expect(Math.abs(second['kl/ref'])).toBeGreaterThan(1e-4);
    expect(first['actor/entropy']).toBeGreaterThan(0);
    expect(first['train/filtering_ratio']).toBe(0);
  });
});

describe('runPpo with oversampling, refill and partial rollout', () => {
  it('ends each step on the first groups to finish and carries the rest into the next step', async () => {
    const t = tinyRun('partial');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        ...t.overrides(),
        'rollout.train_prompts_per_rollout=2',
        'rollout.groups_in_flight=4',
        'rollout.refill=true',
        'rollout.partial_rollout=true',
        'rollout.responses_per_prompt=4',
        'rollout.train_sampling_params.max_new_tokens=6',
        'actor.lr=1e-2',
        'trainer.max_steps=3',
        `trainer.save_dir=${join(t.dir, 'run')}`,
        ...QUIET_TRAINER,
      ],
    });
    const res = await runPpo(config, { stdout: quiet().stream });
    expect(res.steps.map((s) => s['train/groups'])).toEqual([2, 2, 2]);
    expect(
      res.steps.some((s) => s['train/carried_groups'] > 0),
      res.steps.map((s) => s['train/carried_groups']).join(' '),
    ).toBe(true);
  });
});
