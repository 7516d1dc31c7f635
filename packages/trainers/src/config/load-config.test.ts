import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { TrainersError } from '../errors.js';
import { closestKey, editDistance } from './closest-key.js';
import { dpoConfigSchema } from './dpo-config.js';
import { formatConfigHelp } from './format-config-help.js';
import { loadConfig } from './load-config.js';
import { rmConfigSchema } from './rm-config.js';
import { sftConfigSchema } from './sft-config.js';

const base = ['actor.model_name=/models/tiny', 'data.train.path=train.jsonl'];

function yamlFile(text: string): string {
  const dir = tempDir('rl2-config-');
  const file = join(dir, 'sft.yaml');
  writeFileSync(file, text);
  return file;
}

function errorOf(fn: () => unknown): TrainersError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TrainersError) return err;
    throw err;
  }
  throw new Error('expected a TrainersError');
}

describe('loadConfig', () => {
  it('fills RL2 defaults and interpolates ${...} with types kept', () => {
    const c = loadConfig(sftConfigSchema, { overrides: [...base, 'data.train.max_length=512'] });
    expect(c.trainer.save_dir).toBe('ckpts/sft');
    expect(c.data.test.max_length).toBe(512);
    expect(c.data.test.batch_size).toBe(128);
    expect(c.data.test_ratio).toBe(0.03);
    expect(c.actor.max_grad_norm).toBe(1);
    expect(c.actor.betas).toEqual([0.9, 0.999]);
    expect(c.actor.avg_level).toBe('token');
  });

  it('coerces override text by the leaf type', () => {
    const c = loadConfig(sftConfigSchema, {
      overrides: [
        ...base,
        'actor.lr=1e-6',
        'trainer.experiment_name=007',
        'actor.gradient_checkpointing=false',
        'actor.betas=[0.9, 0.95]',
        'trainer.save_freq=null',
      ],
    });
    expect(c.actor.lr).toBe(1e-6);
    expect(c.trainer.experiment_name).toBe('007');
    expect(c.trainer.save_dir).toBe('ckpts/007');
    expect(c.actor.gradient_checkpointing).toBe(false);
    expect(c.actor.betas).toEqual([0.9, 0.95]);
    expect(c.trainer.save_freq).toBeNull();
  });

  it('save_dtype and max_shard_size: defaults as save_pretrained, sizes checked with the key named', () => {
    const c = loadConfig(sftConfigSchema, { overrides: base });
    expect(c.actor.save_dtype).toBeNull();
    expect(c.actor.max_shard_size).toBe('5GB');
    const set = loadConfig(sftConfigSchema, {
      overrides: [...base, 'actor.save_dtype=bfloat16', 'actor.max_shard_size=500MB'],
    });
    expect([set.actor.save_dtype, set.actor.max_shard_size]).toEqual(['bfloat16', '500MB']);
    expect(
      loadConfig(sftConfigSchema, { overrides: [...base, 'actor.max_shard_size=1000000'] }).actor
        .max_shard_size,
    ).toBe(1_000_000);
    const bad = errorOf(() =>
      loadConfig(rmConfigSchema, {
        overrides: ['critic.model_name=m', 'data.train.path=t', 'critic.max_shard_size=lots'],
      }),
    );
    expect(bad.message).toMatch(/critic\.max_shard_size[^\n]*not a size/);
    expect(
      errorOf(() => loadConfig(sftConfigSchema, { overrides: [...base, 'actor.save_dtype=int8'] }))
        .message,
    ).toContain('actor.save_dtype');
  });

  it('applies YAML then command line, command line wins', () => {
    const file = yamlFile(
      'actor:\n  lr: 2.0e-5\n  model_name: m\ndata:\n  train:\n    path: a.jsonl\ntrainer:\n  ' +
        'n_epochs: 3\n  save_dir: out/${trainer.experiment_name}-${actor.lr}\n',
    );
    const c = loadConfig(sftConfigSchema, { configFile: file, overrides: ['trainer.n_epochs=2'] });
    expect(c.actor.lr).toBe(2e-5);
    expect(c.trainer.n_epochs).toBe(2);
    expect(c.trainer.save_dir).toBe('out/sft-0.00002');
  });

  it('names the closest valid key for an unknown key', () => {
    expect(
      errorOf(() => loadConfig(sftConfigSchema, { overrides: [...base, 'actor.lrr=1'] })).message,
    ).toContain('did you mean "actor.lr"');
    expect(
      errorOf(() => loadConfig(sftConfigSchema, { overrides: [...base, 'trainer.n_epoch=1'] }))
        .message,
    ).toContain('"trainer.n_epochs"');
    const e = errorOf(() => loadConfig(rmConfigSchema, { overrides: ['actor.lr=1'] }));
    expect(e.code).toBe('CONFIG_UNKNOWN_KEY');
    expect(e.message).toContain('critic.lr');
    const file = yamlFile('data:\n  train:\n    max_lenght: 3\n');
    const y = errorOf(() => loadConfig(sftConfigSchema, { configFile: file }));
    expect(y.message).toContain(file);
    expect(y.message).toContain('data.train.max_length');
  });

  it('reports invalid values with key, value and source', () => {
    const e = errorOf(() => loadConfig(sftConfigSchema, { overrides: [...base, 'actor.lr=fast'] }));
    expect(e.code).toBe('CONFIG_INVALID_VALUE');
    expect(e.message).toContain('actor.lr');
    expect(e.message).toContain('"fast"');
    expect(e.message).toContain('command line');
    const m = errorOf(() => loadConfig(sftConfigSchema, { overrides: ['data.train.path=x'] }));
    expect(m.message).toContain('actor.model_name');
    expect(
      errorOf(() => loadConfig(sftConfigSchema, { overrides: [...base, 'actor.avg_level=pair'] }))
        .message,
    ).toContain('actor.avg_level');
    expect(
      errorOf(() => loadConfig(sftConfigSchema, { overrides: ['actor.lr'] })).message,
    ).toContain('key=value');
  });

  it('rejects circular and dangling interpolation', () => {
    const circ = errorOf(() =>
      loadConfig(sftConfigSchema, {
        overrides: [
          ...base,
          'trainer.project=${trainer.save_dir}',
          'trainer.experiment_name=${trainer.project}',
        ],
      }),
    );
    expect(circ.code).toBe('CONFIG_INTERPOLATION');
    expect(circ.message).toContain('circular');
    const dangling = errorOf(() =>
      loadConfig(sftConfigSchema, { overrides: [...base, 'trainer.project=${trainer.projet}'] }),
    );
    expect(dangling.message).toContain('${trainer.project}');
  });

  it('reads ${oc.env:NAME} and ${oc.env:NAME,default} as OmegaConf does, a whole value in its leaf type', () => {
    process.env.RL2_TEST_RUNS = '/scratch/runs';
    process.env.RL2_TEST_LR = '3e-6';
    try {
      const file = yamlFile(
        'actor:\n  lr: ${oc.env:RL2_TEST_LR}\ntrainer:\n  save_dir: ${oc.env:RL2_TEST_RUNS}/sft\n' +
          '  max_steps: ${oc.env:RL2_TEST_UNSET,7}\n  experiment_name: ${oc.env:RL2_TEST_UNSET, "x y"}\n',
      );
      const c = loadConfig(sftConfigSchema, { configFile: file, overrides: base });
      expect(c.actor.lr).toBe(3e-6);
      expect(c.trainer.save_dir).toBe('/scratch/runs/sft');
      expect(c.trainer.max_steps).toBe(7);
      expect(c.trainer.experiment_name).toBe('x y');
      const unset = errorOf(() =>
        loadConfig(sftConfigSchema, {
          overrides: [...base, 'trainer.save_dir=${oc.env:RL2_TEST_UNSET}/x'],
        }),
      );
      expect(unset.message).toBe(
        'trainer.save_dir: ${oc.env:RL2_TEST_UNSET}: the environment variable RL2_TEST_UNSET is not set; ' +
          'set it, or give a default as in ${oc.env:RL2_TEST_UNSET,default}',
      );
    } finally {
      delete process.env.RL2_TEST_RUNS;
      delete process.env.RL2_TEST_LR;
    }
  });

  it('another resolver is refused by name, not taken for a misspelt key', () => {
    const e = errorOf(() =>
      loadConfig(sftConfigSchema, { overrides: [...base, 'trainer.experiment_name=${now:%H-%M}'] }),
    );
    expect(e.code).toBe('CONFIG_INTERPOLATION');
    expect(e.message).toContain('uses the resolver "now", which rl2 does not support');
    expect(e.message).not.toContain('did you mean');
  });

  it('DPO reference model defaults to the actor', () => {
    const c = loadConfig(dpoConfigSchema, { overrides: base });
    expect(c.ref_actor.model_name).toBe('/models/tiny');
    expect(c.actor.beta).toBe(0.1);
    expect(c.data.train.chosen_key).toBe('chosen');
  });

  it('--help text lists every key with default and doc', () => {
    const help = formatConfigHelp(dpoConfigSchema);
    expect(help).toMatch(/actor\.beta\s+= 0\.1\s+DPO temperature/);
    expect(help).toContain('"${actor.model_name}"');
    expect(help).toMatch(/^trainer:$/m);
  });
});

describe('closestKey', () => {
  it('edit distance by hand', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('lr', 'lr')).toBe(0);
  });
  it('matches a bare last segment', () => {
    expect(closestKey('beta', ['actor.lr', 'actor.beta', 'trainer.seed'])).toBe('actor.beta');
  });
});
