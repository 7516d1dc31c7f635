import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { parseSafetensors, readPeftAdapter } from '@rl2/models';
import { createSGLangEngine, serveModel } from '@rl2/rollout';
import { describe, expect, it } from 'vitest';
import { QUIET_TRAINER, tinyRun } from '../../test/ppo-fixtures/tiny-run.js';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from '../ppo/ppo-config.js';
import { runPpo } from '../ppo/run-ppo.js';

const quiet = {
  stdout: new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream,
};
const optimizerKeys = (ckpt: string) => [
  ...parseSafetensors(new Uint8Array(readFileSync(join(ckpt, 'optimizer.safetensors')))).keys(),
];

describe('rl2 ppo with LoRA', () => {
  it('GRPO on actor adapters: the reference is the base (KL 0 at step 1), adapters alone in AdamW, resume exact with dropout', async () => {
    const t = tinyRun('lora');
    const overrides = (saveDir: string, extra: string[] = []) => [
      ...t.overrides(),
      'rollout.train_prompts_per_rollout=4',
      'rollout.responses_per_prompt=4',
      'rollout.train_sampling_params.max_new_tokens=4',
      'adv.estimator=grpo',
      'kl.coef=0.05',
      'actor.lora.rank=4',
      'actor.lora.dropout=0.3',
      'actor.update_per_rollout=2',
      'actor.lr=5e-2',
      'actor.warmup_ratio=0',
      'actor.scheduler=constant',
      'trainer.n_epochs=2',
      `trainer.save_dir=${saveDir}`,
      ...QUIET_TRAINER,
      ...extra,
    ];
    const full = await runPpo(
      loadConfig(ppoConfigSchema, { overrides: overrides(join(t.dir, 'full')) }),
      quiet,
    );
    expect(full.steps).toHaveLength(4);
    expect(full.steps[0]!['kl/ref']).toBe(0); // B = 0: the actor starts as its base, the reference
    expect(full.steps[3]!['kl/ref']).not.toBe(0);
    const ckpt = join(t.dir, 'full', 'step-4');
    expect(readPeftAdapter(join(ckpt, 'adapter')).spec.rank).toBe(4);
    expect(existsSync(join(ckpt, 'model'))).toBe(false);
    expect(optimizerKeys(ckpt).every((k) => k.includes('.lora_'))).toBe(true);

    const parted = join(t.dir, 'parted');
    const stop = new AbortController();
    const first = await runPpo(loadConfig(ppoConfigSchema, { overrides: overrides(parted) }), {
      ...quiet,
      signal: stop.signal,
      onStep: (r) => (r.step === 2 ? stop.abort() : undefined),
    });
    expect(first.step).toBe(2);
    const rest = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: overrides(parted, ['trainer.load_ckpt_from=latest']),
      }),
      quiet,
    );
    const resumed = [...first.steps, ...rest.steps];
    for (const [i, s] of full.steps.entries())
      for (const key of ['train/reward/mean', 'actor/loss', 'actor/grad_norm', 'kl/ref'])
        expect(resumed[i]![key], `step ${i + 1} ${key}`).toBe(s[key]);

    // the dropout is really on: without it the same run trains otherwise from step 1
    const noDropout = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: overrides(join(t.dir, 'no-dropout'), ['actor.lora.dropout=0']),
      }),
      quiet,
    );
    expect(noDropout.steps[0]!['actor/grad_norm']).not.toBe(full.steps[0]!['actor/grad_norm']);
    expect(noDropout.steps[0]!['kl/ref']).toBe(0); // the passes before the update: no dropout
  }, 120_000);

  it('actor.lora.modules_to_save: the copies train and the engine generates with them; the reference stays the base', async () => {
    const t = tinyRun('lora-mts');
    const saveDir = join(t.dir, 'run');
    const res = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: [
          ...t.overrides(),
          'rollout.train_prompts_per_rollout=4',
          'rollout.responses_per_prompt=4',
          'rollout.train_sampling_params.max_new_tokens=4',
          'adv.estimator=grpo',
          'kl.coef=0.05',
          'actor.lora.rank=2',
          'actor.lora.modules_to_save=[norm]',
          'actor.lr=5e-2',
          'actor.scheduler=constant',
          'actor.warmup_ratio=0',
          'trainer.n_epochs=2',
          `trainer.save_dir=${saveDir}`,
          ...QUIET_TRAINER,
        ],
      }),
      quiet,
    );
    expect(res.steps[0]!['kl/ref']).toBe(0); // the copies start as the base's norms
    expect(res.steps).toHaveLength(4);
    expect(res.steps[3]!['kl/ref']).not.toBe(0);
    // the embedded engine samples from base + adapters + the trained copies: its logprobs are the trainer's
    for (const s of res.steps) expect(Math.abs(s['actor/engineApproxKl']!)).toBeLessThan(1e-6);
    const ckpt = join(saveDir, 'step-4');
    const norms = optimizerKeys(ckpt).filter((k) => k.endsWith('norm.weight'));
    expect(norms.length).toBeGreaterThan(0);
    const adapter = readPeftAdapter(join(ckpt, 'adapter'));
    expect(adapter.spec.modulesToSave).toEqual(['norm']);
    expect(adapter.tensors.has('model.norm.weight')).toBe(true);
  }, 120_000);

  it('GAE with a LoRA critic: its adapters and score head train and are saved beside critic/', async () => {
    const t = tinyRun('lora-gae');
    const saveDir = join(t.dir, 'run');
    const res = await runPpo(
      loadConfig(ppoConfigSchema, {
        overrides: [
          ...t.overrides(),
          'rollout.train_prompts_per_rollout=4',
          'rollout.responses_per_prompt=4',
          'rollout.train_sampling_params.max_new_tokens=4',
          'adv.estimator=gae',
          'actor.lora.rank=2',
          'critic.lora.rank=2',
          'critic.lora.dropout=0.1',
          'critic.lora.save_merged=true',
          'critic.lr=1e-2',
          'trainer.n_epochs=1',
          `trainer.save_dir=${saveDir}`,
          ...QUIET_TRAINER,
        ],
      }),
      quiet,
    );
    for (const s of res.steps) expect(s['critic/grad_norm']).toBeGreaterThan(0);
    const ckpt = join(saveDir, 'step-2');
    const critic = readPeftAdapter(join(ckpt, 'critic_adapter'));
    expect(critic.config).toMatchObject({ task_type: 'TOKEN_CLS', modules_to_save: ['score'] });
    expect(Math.max(...critic.tensors.get('score.weight')!.data.map(Math.abs))).toBeGreaterThan(0);
    expect(existsSync(join(ckpt, 'critic', 'model.safetensors'))).toBe(true); // critic.lora.save_merged
    expect(existsSync(join(ckpt, 'model'))).toBe(false);
  }, 120_000);

  it('rollout.engine=sglang syncs only the adapter: /load_lora_adapter on the server, the base untouched', async () => {
    const t = tinyRun('lora-sglang');
    const server = await serveModel({
      model: t.model,
      port: 0,
      threads: 1,
      enableLora: true,
      log: () => {},
    });
    try {
      const client = createSGLangEngine({ urls: [server.url] });
      const prompt = {
        inputIds: [3, 4, 5],
        sampling: { temperature: 0, max_new_tokens: 4, ignore_eos: true },
      };
      const before = await client.generate(prompt);
      const saveDir = join(t.dir, 'run');
      const res = await runPpo(
        loadConfig(ppoConfigSchema, {
          overrides: [
            ...t.overrides(),
            'rollout.engine=sglang',
            `rollout.server_urls=["${server.url}"]`,
            'rollout.train_prompts_per_rollout=4',
            'rollout.responses_per_prompt=4',
            'rollout.train_sampling_params.max_new_tokens=3',
            'actor.lora.rank=4',
            'actor.lr=5e-2',
            'trainer.max_steps=2',
            `trainer.save_dir=${saveDir}`,
            ...QUIET_TRAINER,
          ],
        }),
        quiet,
      );
      expect(res.step).toBe(2);
      const synced = join(saveDir, 'weights');
      expect(existsSync(join(synced, 'adapter_model.safetensors'))).toBe(true);
      expect(existsSync(join(synced, 'model.safetensors'))).toBe(false); // no full model pushed
      // loaded at the start (actor-1) and after each update: the newest alone stays on the server
      const withAdapter = await client.generate({ ...prompt, lora: 'actor-3' });
      expect(withAdapter.logprobs).not.toEqual(before.logprobs);
      await expect(client.generate({ ...prompt, lora: 'actor-2' })).rejects.toThrow(
        /not a loaded LoRA adapter/,
      );
      expect((await client.generate(prompt)).logprobs).toEqual(before.logprobs); // the base is as it was
    } finally {
      await server.close();
    }
  }, 120_000);

  it('rollout.engine=sglang with actor.lora.modules_to_save syncs the merged actor (SGLang loads LoRA matrices only)', async () => {
    const t = tinyRun('lora-sglang-mts');
    const server = await serveModel({ model: t.model, port: 0, threads: 1, log: () => {} });
    try {
      const saveDir = join(t.dir, 'run');
      const res = await runPpo(
        loadConfig(ppoConfigSchema, {
          overrides: [
            ...t.overrides(),
            'rollout.engine=sglang',
            `rollout.server_urls=["${server.url}"]`,
            'rollout.train_prompts_per_rollout=4',
            'rollout.responses_per_prompt=4',
            'rollout.train_sampling_params.max_new_tokens=3',
            'actor.lora.rank=4',
            'actor.lora.modules_to_save=[norm]',
            'trainer.max_steps=2',
            `trainer.save_dir=${saveDir}`,
            ...QUIET_TRAINER,
          ],
        }),
        quiet,
      );
      expect(res.step).toBe(2);
      const synced = join(saveDir, 'weights');
      expect(existsSync(join(synced, 'model.safetensors'))).toBe(true);
      expect(existsSync(join(synced, 'adapter_model.safetensors'))).toBe(false);
    } finally {
      await server.close();
    }
  }, 120_000);
});
