import '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { sftConfigSchema } from '../config/sft-config.js';
import { ppoConfigSchema } from '../ppo/ppo-config.js';
import { loraLrScale, sectionOptimizer } from './section-optimizer.js';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

const names = [
  'model.layers.0.self_attn.q_proj.lora_A.weight',
  'model.layers.0.self_attn.q_proj.lora_B.weight',
  'model.layers.0.mlp.down_proj.lora_A.weight',
  'model.layers.0.mlp.down_proj.lora_B.weight',
  'model.embed_tokens.weight', // a modules_to_save copy
  'model.norm.weight',
];

/** One AdamW step from zeros with every gradient 1: Adam's first step moves each element by lr. */
function firstStep(
  overrides: string[],
  schema: typeof sftConfigSchema | typeof ppoConfigSchema = sftConfigSchema,
) {
  const c = loadConfig(schema, {
    overrides: [
      'actor.model_name=m',
      'data.train.path=t',
      'actor.lr=1e-3',
      'actor.warmup_ratio=0',
      ...overrides,
    ],
  });
  const params = Object.fromEntries(names.map((n) => [n, tf.variable(tf.zeros([2, 3]), true, n)]));
  const { optimizer, lrAt } = sectionOptimizer(c.actor, params, 10);
  optimizer.step(Object.fromEntries(names.map((n) => [n, tf.ones([2, 3])])), lrAt(0));
  const moved = Object.fromEntries(names.map((n) => [n, -(params[n]!.dataSync()[0] as number)]));
  optimizer.dispose();
  tf.dispose(Object.values(params));
  return moved;
}

describe('actor.lora.lr_ratio (LoRA+)', () => {
  it('steps the adapters’ B matrices at lr_ratio x lr in AdamW, A and the saved copies at lr', () => {
    const moved = firstStep(['actor.lora.rank=4', 'actor.lora.lr_ratio=16']);
    for (const n of names) {
      const want = n.endsWith('.lora_B.weight') ? 16e-3 : 1e-3;
      expect(moved[n]).toBeCloseTo(want, 8);
    }
  });

  it('the same under rl2 ppo (actor.lora.lr_ratio)', () => {
    const moved = firstStep(
      ['actor.lora.rank=4', 'actor.lora.lr_ratio=4', 'rollout.env_path=e.ts'],
      ppoConfigSchema,
    );
    expect(moved[names[1]!]).toBeCloseTo(4e-3, 8);
    expect(moved[names[0]!]).toBeCloseTo(1e-3, 8);
  });

  it('1 (the default) and full training (rank 0) step every parameter at lr', () => {
    for (const overrides of [['actor.lora.rank=4'], ['actor.lora.lr_ratio=16']])
      for (const v of Object.values(firstStep(overrides))) expect(v).toBeCloseTo(1e-3, 8);
  });

  it('loraLrScale: B at the ratio, A at 1, the other trained parameters at modulesRatio', () => {
    expect(loraLrScale(names, 16, 0.25)).toEqual({
      [names[0]!]: 1,
      [names[1]!]: 16,
      [names[2]!]: 1,
      [names[3]!]: 16,
      [names[4]!]: 0.25,
      [names[5]!]: 0.25,
    });
  });

  it('actor.lora.modules_lr_ratio steps the modules_to_save copies at that x lr', () => {
    const moved = firstStep(['actor.lora.rank=4', 'actor.lora.modules_lr_ratio=0.25']);
    for (const n of names) {
      const want = /\.lora_[AB]\.weight$/.test(n) ? 1e-3 : 0.25e-3;
      expect(moved[n]).toBeCloseTo(want, 8);
    }
  });
});
