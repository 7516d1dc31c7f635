import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';
import { runPpo } from './run-ppo.js';
import { tinyRun } from './testing/tiny-run.js';
import { Writable } from 'node:stream';

const quiet = () => {
  const chunks: string[] = [];
  const stream = new Writable({ write: (c, _e, cb) => { chunks.push(String(c)); cb(); } }) as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
};
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

describe('runPpo on a tiny model', () => {
  it('GRPO raises the reward of a trivially learnable env (share of digits generated)', async () => {
    const t = tinyRun('learns');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        `actor.model_name=${t.model}`,
        `data.train.path=${t.train}`,
        `data.test.path=${t.test}`,
        `rollout.env_path=${t.digitsEnv}`,
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
    const res = await runPpo(config, { stdout: out.stream });
    expect(res.step).toBe(16);
    const rewards = res.steps.map((s) => s['train/reward/mean']);
    expect(mean(rewards.slice(-3)), rewards.map((r) => r.toFixed(3)).join(' ')).toBeGreaterThan(mean(rewards.slice(0, 3)) + 0.4);
    const before = res.tests[0]['test/reward/mean'];
    const after = res.tests.at(-1)?.['test/reward/mean'] ?? 0;
    expect(res.tests.map((r) => r.step)).toEqual([0, 8, 16]);
    expect(after, `test reward ${before} -> ${after}`).toBeGreaterThan(before);
    expect(after).toBeGreaterThan(0.9);
    for (const key of ['actor/clipFraction', 'actor/entropy', 'train/filtering_ratio', 'tokens_per_s/rollout', 'tokens_per_s/update']) {
      expect(Number.isFinite(res.steps[0][key]), key).toBe(true);
    }
    expect(existsSync(join(t.dir, 'run', 'step-16', 'model', 'model.safetensors'))).toBe(true);
    expect(readFileSync(join(t.dir, 'run', 'rollouts', 'step-1.jsonl'), 'utf8').split('\n').filter(Boolean)).toHaveLength(32);
  });
});
