import { join } from 'node:path';
import {
  dpoConfigSchema,
  loadConfig,
  ppoConfigSchema,
  rmConfigSchema,
  sftConfigSchema,
} from '@rl2/trainers';
import { describe, expect, it } from 'vitest';
import { recipes } from './run-recipe.js';

/** Each full-size YAML, resolved as rl2 resolves it, holds the values of RL2's script. */
const file = (name: string) => ({ configFile: join(recipes, name, `${name}.yaml`) });

describe("the recipes carry RL2's settings", () => {
  it('openthoughts-sft: limo_sft.sh on Chenmien/OpenThoughts', () => {
    const c = loadConfig(sftConfigSchema, file('openthoughts-sft'));
    expect(c.data.train).toMatchObject({
      path: 'Chenmien/OpenThoughts',
      max_length: 16384,
      batch_size: 32,
    });
    expect(c.actor).toMatchObject({
      model_name: 'Qwen/Qwen2.5-7B-Instruct',
      cp_size: 4,
      max_length_per_device: 4096,
      lr: 1e-6,
      min_lr: 1e-7,
    });
    expect(c.trainer.n_epochs).toBe(15);
  });

  it('skywork-rm and ultrafeedback-dpo', () => {
    const rm = loadConfig(rmConfigSchema, file('skywork-rm'));
    expect(rm.data.train).toMatchObject({
      path: 'Chenmien/SkyworkRM',
      max_length: 2048,
      batch_size: 128,
    });
    expect(rm.critic).toMatchObject({
      model_name: 'meta-llama/Llama-3.1-8B-Instruct',
      max_length_per_device: 8192,
      lr: 5e-6,
    });
    const dpo = loadConfig(dpoConfigSchema, file('ultrafeedback-dpo'));
    expect(dpo.data.train).toMatchObject({ path: 'Chenmien/UltraFeedback', max_length: 1024 });
    expect(dpo.actor).toMatchObject({
      model_name: 'allenai/Llama-3.1-Tulu-3-8B-SFT',
      max_length_per_device: 4096,
      beta: 0.1,
      lr: 1e-6,
      warmup_ratio: 0.03,
    });
    expect(dpo.ref_actor.model_name).toBe('allenai/Llama-3.1-Tulu-3-8B-SFT');
  });

  it('orz-ppo: orz_ppo.sh, PPO with a critic', () => {
    const c = loadConfig(ppoConfigSchema, file('orz-ppo'));
    expect(c.data.train.path).toBe('Chenmien/OpenReasonerZero');
    expect(c.data.test.path).toBe('Chenmien/OlympiadBench');
    expect(c.rollout).toMatchObject({
      env_path: 'examples/recipes/orz/orz-env.ts',
      train_prompts_per_rollout: 128,
      responses_per_prompt: 64,
    });
    expect(c.rollout.train_sampling_params.max_new_tokens).toBe(8192);
    expect(c.rollout.test_sampling_params).toMatchObject({ temperature: 0, max_new_tokens: 8192 });
    expect(c.actor).toMatchObject({
      model_name: 'Qwen/Qwen2.5-7B',
      cp_size: 2,
      freeze_steps: 4,
      lr: 1e-6,
    });
    expect(c.critic).toMatchObject({ model_name: 'Qwen/Qwen2.5-7B', cp_size: 2, lr: 5e-6 });
    expect(c.adv.estimator).toBe('gae');
    expect(c.kl.coef).toBe(0);
    expect(c.trainer).toMatchObject({ max_steps: 512, test_freq: 8, save_freq: 32 });
  });

  it('searchr1: searchr1.sh, multi-turn with stop strings', () => {
    const c = loadConfig(ppoConfigSchema, file('searchr1'));
    expect(c.data.train.path).toBe('train@Chenmien/SearchR1');
    expect(c.data.test.path).toBe('test@Chenmien/SearchR1');
    expect(c.rollout).toMatchObject({
      train_prompts_per_rollout: 256,
      responses_per_prompt: 5,
      max_turns: 2,
      max_failed_steps: 2,
    });
    expect(c.rollout.train_sampling_params).toMatchObject({
      max_new_tokens: 512,
      stop: ['</search>', '</answer>'],
    });
    expect(c.rollout.test_sampling_params.stop).toEqual(['</search>', '</answer>']);
    expect(c.actor).toMatchObject({ model_name: 'Qwen/Qwen2.5-3B', max_length_per_device: 8192 });
    expect(c.adv.estimator).toBe('reinforce');
    expect(c.trainer).toMatchObject({ max_steps: 256, test_freq: 8, project: 'SearchR1' });
  });

  it('guess-number: gem_reinforce.sh', () => {
    const c = loadConfig(ppoConfigSchema, file('guess-number'));
    expect(c.rollout).toMatchObject({ train_prompts_per_rollout: 64, responses_per_prompt: 1 });
    expect(c.rollout.train_sampling_params.max_new_tokens).toBe(1024);
    expect(c.actor.model_name).toBe('Qwen/Qwen3-1.7B-Base');
    expect(c.adv.norm_var).toBe(true);
  });
});
