import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET, metrics, recipes, rl2, rollouts, root, tinyModel, tmp } from './run-recipe.js';

/**
 * Each recipe's YAML as shipped, on its local stand-in rows (same schema as the hub data) and a
 * tiny random model, for 2 steps. Only model, data, sizes and parallel layout are overridden.
 */
let dir: string;
let model: string;
const cwd = process.cwd();
beforeAll(async () => {
  // the YAMLs name their envs from the repository root, where users run them
  process.chdir(root);
  dir = tmp('runs');
  model = await tinyModel(dir);
});
afterAll(() => {
  process.chdir(cwd);
  rmSync(dir, { recursive: true, force: true });
});

const data = (recipe: string, file: string) => join(recipes, recipe, 'data', file);
const config = (recipe: string) => ['--config', join(recipes, recipe, `${recipe}.yaml`)];

/** Shapes for the stand-in: tiny batches, short lengths, one process. */
const small = (section: 'actor' | 'critic') => [
  `${section}.model_name=${model}`,
  `${section}.cp_size=1`,
  `${section}.max_length_per_device=1024`,
];

function expectSteps(saveDir: string, key: string, steps: number[]) {
  const logged = metrics(saveDir).filter((m) => m[key] !== undefined);
  expect(logged.map((m) => m.step)).toEqual(steps);
  for (const m of logged) expect(Number.isFinite(m[key])).toBe(true);
}

/** A supervised recipe (sft, rm, dpo) for 2 steps on its stand-in; returns where it saved. */
async function runSupervised(
  command: string,
  recipe: string,
  maxLength: number,
  section: 'actor' | 'critic',
) {
  const saveDir = join(dir, recipe);
  const r = await rl2([
    command,
    ...config(recipe),
    `data.train.path=${data(recipe, 'standin.jsonl')}`,
    'data.test_ratio=0.2',
    `data.train.max_length=${maxLength}`,
    'data.train.batch_size=4',
    ...small(section),
    'trainer.max_steps=2',
    `trainer.save_dir=${saveDir}`,
    ...QUIET,
  ]);
  expect(r.code, r.stderr).toBe(0);
  expectSteps(saveDir, 'train/loss', [1, 2]);
  return saveDir;
}

describe('RL2 recipes on their stand-ins, 2 steps each', () => {
  it('openthoughts-sft: rl2 sft', async () => {
    await runSupervised('sft', 'openthoughts-sft', 256, 'actor');
  });

  it('skywork-rm: rl2 rm on {chosen, rejected} conversations', async () => {
    const saveDir = await runSupervised('rm', 'skywork-rm', 128, 'critic');
    expect(metrics(saveDir).some((m) => m['train/accuracy'] !== undefined)).toBe(true);
  });

  it('ultrafeedback-dpo: rl2 dpo on {chosen, rejected} conversations', async () => {
    await runSupervised('dpo', 'ultrafeedback-dpo', 128, 'actor');
  });

  const ppo = (recipe: string, train: string, test: string, extra: string[] = []) => [
    'ppo',
    ...config(recipe),
    `data.train.path=${data(recipe, train)}`,
    `data.test.path=${data(recipe, test)}`,
    'rollout.train_prompts_per_rollout=2',
    'rollout.test_prompts_per_rollout=2',
    'rollout.responses_per_prompt=2',
    'rollout.train_sampling_params.max_new_tokens=8',
    'rollout.env_workers=1',
    ...small('actor'),
    'trainer.max_steps=2',
    ...extra,
    ...QUIET,
  ];

  function expectRollout(saveDir: string) {
    expectSteps(saveDir, 'train/reward/mean', [1, 2]);
    const rows = rollouts(saveDir, 1);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => JSON.stringify(row).length > 0)).toBe(true);
  }

  it('orz-ppo: rl2 ppo with a critic (GAE), rewarded by the math verifier', async () => {
    const saveDir = join(dir, 'orz');
    const r = await rl2(
      ppo('orz-ppo', 'standin-train.jsonl', 'standin-test.jsonl', [
        ...small('critic'),
        'actor.freeze_steps=1',
        // a random model never gets a math answer right: every group is uniform, and the
        // critic would train on nothing after dynamic filtering
        'rollout.dynamic_filtering=false',
        `trainer.save_dir=${saveDir}`,
      ]),
    );
    expect(r.code, r.stderr).toBe(0);
    expectRollout(saveDir);
    expectSteps(saveDir, 'critic/loss', [1, 2]);
  });

  it('searchr1: multi-turn rl2 ppo with the search env (the tiny model never searches: invalid actions)', async () => {
    const saveDir = join(dir, 'searchr1');
    const r = await rl2(
      ppo('searchr1', 'standin-train.jsonl', 'standin-test.jsonl', [
        'actor.max_length_per_device=2048',
        `trainer.save_dir=${saveDir}`,
      ]),
    );
    expect(r.code, r.stderr).toBe(0);
    expectRollout(saveDir);
    expect(JSON.stringify(rollouts(saveDir, 1))).toMatch(/My previous action is invalid/);
  });

  it('guess-number: multi-turn rl2 ppo, the GEM-style game', async () => {
    const saveDir = join(dir, 'guess');
    const r = await rl2(
      ppo('guess-number', 'games-train.jsonl', 'games-test.jsonl', [
        'rollout.max_turns=3',
        `trainer.save_dir=${saveDir}`,
      ]),
    );
    expect(r.code, r.stderr).toBe(0);
    expectRollout(saveDir);
    expect(JSON.stringify(rollouts(saveDir, 1))).toMatch(/Give one whole number/);
  });
});
