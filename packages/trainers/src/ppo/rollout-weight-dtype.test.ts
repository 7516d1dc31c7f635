import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';

// rollout.weight_dtype: the embedded generator's weight dtype (auto by default) and the error
// for a value it does not take, naming the key and the choices.
const required = ['actor.model_name=/m', 'data.train.path=/d.jsonl', 'rollout.env_path=/env.ts'];

describe('rollout.weight_dtype', () => {
  it('defaults to auto and takes bfloat16', () => {
    expect(loadConfig(ppoConfigSchema, { overrides: required }).rollout.weight_dtype).toBe('auto');
    const c = loadConfig(ppoConfigSchema, {
      overrides: [...required, 'rollout.weight_dtype=bfloat16'],
    });
    expect(c.rollout.weight_dtype).toBe('bfloat16');
  });

  it('names the key and the values for another', () => {
    let message = '';
    try {
      loadConfig(ppoConfigSchema, { overrides: [...required, 'rollout.weight_dtype=bf8'] });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('rollout.weight_dtype');
    for (const v of ['auto', 'float32', 'bfloat16', 'float16']) expect(message).toContain(v);
  });
});
