import { describe, expect, it } from 'vitest';
import { formatConfigHelp } from '../config/format-config-help.js';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';

const required = ['actor.model_name=/m', 'data.train.path=/d.jsonl', 'rollout.env_path=/env.ts'];

describe('ppoConfigSchema', () => {
  it("has RL2's defaults (Dr. GRPO) and interpolates the shared keys", () => {
    const c = loadConfig(ppoConfigSchema, { overrides: [...required, 'rollout.train_sampling_params.temperature=0.7', 'rollout.train_sampling_params.max_new_tokens=32'] });
    expect(c.adv).toEqual({ estimator: 'reinforce', gamma: 1, lamda: 1, norm_var: false, global_norm: false });
    expect(c.kl).toEqual({ coef: 0, type: null, reward_estimator: 'k1', loss_estimator: 'k2' });
    expect(c.actor).toMatchObject({ lr: 1e-6, clip: 0.2, avg_level: 'token', update_per_rollout: 1, freeze_steps: 0, tis_coef: 0, temperature: 0.7 });
    expect(c.critic).toMatchObject({ lr: 5e-6, clip: 0.5, model_name: '/m', avg_level: 'token' });
    expect(c.ref_actor.model_name).toBe('/m');
    expect(c.rollout.test_sampling_params).toEqual({ temperature: 0, top_p: 1, top_k: -1, max_new_tokens: 32, stop: null, no_stop_trim: true });
    expect(c.rollout.dynamic_filtering).toBe(true);
    expect(c.trainer.save_dir).toBe('ckpts/ppo');
  });

  it('takes the DeepSeek GRPO recipe and names the closest key for a typo', () => {
    const c = loadConfig(ppoConfigSchema, { overrides: [...required, 'actor.avg_level=sequence', 'kl.type=loss', 'kl.loss_estimator=k3', 'adv.norm_var=true', 'rollout.train_sampling_params.stop=["</answer>"]'] });
    expect(c.rollout.train_sampling_params.stop).toEqual(['</answer>']);
    expect(c.rollout.test_sampling_params.stop).toEqual(['</answer>']);
    expect(() => loadConfig(ppoConfigSchema, { overrides: [...required, 'adv.lambda=0.9'] })).toThrow(/did you mean "adv.lamda"/);
    expect(() => loadConfig(ppoConfigSchema, { overrides: [...required, 'adv.estimator=ppo'] })).toThrow(/adv.estimator/);
    expect(formatConfigHelp(ppoConfigSchema)).toContain('rollout.responses_per_prompt');
  });
});
