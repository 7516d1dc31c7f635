import { describe, expect, it } from 'vitest';
import { formatConfigHelp } from '../config/format-config-help.js';
import { loadConfig } from '../config/load-config.js';
import { checkPpoConfig, ppoConfigSchema } from './ppo-config.js';

const required = ['actor.model_name=/m', 'data.train.path=/d.jsonl', 'rollout.env_path=/env.ts'];

describe('ppoConfigSchema', () => {
  it("has RL2's defaults (Dr. GRPO) and interpolates the shared keys", () => {
    const c = loadConfig(ppoConfigSchema, {
      overrides: [
        ...required,
        'rollout.train_sampling_params.temperature=0.7',
        'rollout.train_sampling_params.max_new_tokens=32',
      ],
    });
    expect(c.adv).toEqual({
      estimator: 'reinforce',
      gamma: 1,
      lamda: 1,
      norm_var: false,
      global_norm: false,
    });
    expect(c.kl).toEqual({
      coef: 0,
      type: null,
      reward_estimator: 'k1',
      loss_estimator: 'k2',
      target: null,
      horizon: 10000,
    });
    expect(c.actor).toMatchObject({
      lr: 1e-6,
      clip: 0.2,
      avg_level: 'token',
      update_per_rollout: 1,
      freeze_steps: 0,
      tis_coef: 0,
      temperature: 0.7,
    });
    // the algorithm keys default to plain PPO: symmetric clip, per-token ratio, no dual clip
    expect(c.actor).toMatchObject({
      loss: 'ppo',
      clip_low: 0.2,
      clip_high: 0.2,
      dual_clip: null,
      norm_length: 32,
    });
    expect(c.critic).toMatchObject({
      lr: 5e-6,
      clip: 0.5,
      model_name: '/m',
      avg_level: 'token',
      norm_length: 32,
    });
    expect(c.ref_actor.model_name).toBe('/m');
    expect(c.rollout.test_sampling_params).toEqual({
      temperature: 0,
      top_p: 1,
      top_k: -1,
      max_new_tokens: 32,
      stop: null,
      no_stop_trim: true,
    });
    expect(c.rollout.dynamic_filtering).toBe(true);
    expect(c.trainer.save_dir).toBe('ckpts/ppo');
  });

  it('takes the DeepSeek GRPO recipe and names the closest key for a typo', () => {
    const c = loadConfig(ppoConfigSchema, {
      overrides: [
        ...required,
        'actor.avg_level=sequence',
        'kl.type=loss',
        'kl.loss_estimator=k3',
        'adv.norm_var=true',
        'rollout.train_sampling_params.stop=["</answer>"]',
      ],
    });
    expect(c.rollout.train_sampling_params.stop).toEqual(['</answer>']);
    expect(c.rollout.test_sampling_params.stop).toEqual(['</answer>']);
    expect(() =>
      loadConfig(ppoConfigSchema, { overrides: [...required, 'adv.lambda=0.9'] }),
    ).toThrow(/did you mean "adv.lamda"/);
    expect(() =>
      loadConfig(ppoConfigSchema, { overrides: [...required, 'adv.estimator=ppo'] }),
    ).toThrow(/adv.estimator/);
    expect(formatConfigHelp(ppoConfigSchema)).toContain('rollout.responses_per_prompt');
  });

  it('adv.estimator=dr_grpo is an alias of dr-grpo', () => {
    const c = loadConfig(ppoConfigSchema, { overrides: [...required, 'adv.estimator=dr_grpo'] });
    expect(c.adv.estimator).toBe('dr-grpo');
    expect(formatConfigHelp(ppoConfigSchema)).toMatch(
      /adv\.estimator.*reinforce \| grpo \| dr-grpo/,
    );
  });

  it('clip_low / clip_high follow actor.clip unless set; the critic follows actor.avg_level', () => {
    const c = loadConfig(ppoConfigSchema, {
      overrides: [
        ...required,
        'actor.clip=0.1',
        'actor.clip_high=0.28',
        'actor.avg_level=seq-mean-token-sum-norm',
      ],
    });
    expect(c.actor).toMatchObject({ clip_low: 0.1, clip_high: 0.28 });
    expect(c.critic.avg_level).toBe('seq-mean-token-sum-norm');
  });

  it.each([
    [
      'adv.estimator=ppo',
      /adv\.estimator.*"reinforce"\|"grpo"\|"dr-grpo"\|"rloo"\|"reinforce\+\+"\|"reinforce\+\+-baseline"\|"gae"/,
    ],
    ['actor.loss=kimi', /actor\.loss.*"ppo"\|"gspo"/],
    [
      'actor.avg_level=pair',
      /actor\.avg_level.*"token"\|"sequence"\|"token-mean"\|"seq-mean-token-sum"\|"seq-mean-token-mean"\|"seq-mean-token-sum-norm"/,
    ],
    ['actor.clip_low=1', /actor\.clip_low.*<1/],
    ['actor.clip_high=-0.1', /actor\.clip_high.*>=0/],
    ['actor.dual_clip=0.5', /actor\.dual_clip.*>1/],
    ['actor.tis_coef=-1', /actor\.tis_coef.*>=0/],
    ['kl.type=kl', /kl\.type.*"reward"\|"advantage"\|"loss"/],
    ['kl.reward_estimator=k4', /kl\.reward_estimator.*"k1"\|"k2"\|"k3"/],
    ['kl.loss_estimator=k0', /kl\.loss_estimator.*"k1"\|"k2"\|"k3"/],
    ['kl.target=0', /kl\.target.*>0/],
    ['kl.horizon=0', /kl\.horizon.*>0/],
    ['actor.norm_length=0', /actor\.norm_length.*>0/],
  ])('%s fails naming the key and the allowed values', (override, message) => {
    expect(() => loadConfig(ppoConfigSchema, { overrides: [...required, override] })).toThrow(
      message,
    );
  });

  it('adaptive KL (kl.target) needs a starting kl.coef and a kl.type', () => {
    const load = (...o: string[]) =>
      loadConfig(ppoConfigSchema, { overrides: [...required, ...o] });
    expect(() => checkPpoConfig(load('kl.target=6', 'kl.type=reward'))).toThrow(
      /kl\.target=6.*kl\.coef=0; set kl\.coef > 0/,
    );
    expect(() => checkPpoConfig(load('kl.target=6', 'kl.coef=0.1'))).toThrow(
      /set kl\.type to one of reward, advantage, loss/,
    );
    expect(() => checkPpoConfig(load('kl.target=6', 'kl.coef=0.1', 'kl.type=loss'))).not.toThrow();
  });

  it('--help documents every algorithm key', () => {
    const help = formatConfigHelp(ppoConfigSchema);
    for (const key of [
      'adv.estimator',
      'actor.loss',
      'actor.clip_low',
      'actor.clip_high',
      'actor.dual_clip',
      'actor.tis_coef',
      'actor.avg_level',
      'actor.norm_length',
      'kl.type',
      'kl.reward_estimator',
      'kl.loss_estimator',
      'kl.target',
      'kl.horizon',
    ]) {
      expect(help).toContain(key);
    }
    for (const name of [
      'reinforce++-baseline',
      'gspo',
      'seq-mean-token-sum-norm',
      'k3',
      'clip-higher',
      'Dual-clip'.toLowerCase(),
    ])
      expect(help).toContain(name);
  });
});
