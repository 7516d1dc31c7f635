import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_TOKENIZER, initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';

describe('rl2 <trainer> --help', () => {
  it('prints the config tree with defaults and docs', async () => {
    const r = await rl2(['dpo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/actor\.beta\s+= 0\.1\s+DPO temperature/);
    expect(r.stdout).toMatch(/actor\.warmup_ratio\s+= 0\.1/);
    expect(r.stdout).toMatch(/trainer\.save_dir\s+= "ckpts\/\$\{trainer\.experiment_name\}"/);
    expect(r.stdout).toContain('--config <file>');
    const sft = await rl2(['sft', '--help']);
    expect(sft.stdout).toMatch(/actor\.avg_level\s+= "token"/);
    expect(sft.stdout).not.toMatch(/actor\.beta\s/);
  });
  it('rl2 ppo --help documents every algorithm key with its allowed values', async () => {
    const r = await rl2(['ppo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /adv\.estimator\s+= "reinforce".*\(reinforce \| grpo \| dr-grpo \| rloo \| reinforce\+\+ \| reinforce\+\+-baseline \| gae\)/,
    );
    expect(r.stdout).toMatch(/actor\.loss\s+= "ppo".*GSPO.*\(ppo \| gspo\)/);
    expect(r.stdout).toMatch(/actor\.clip_high\s+= "\$\{actor\.clip\}".*clip-higher/);
    expect(r.stdout).toMatch(/actor\.dual_clip\s+= null/);
    expect(r.stdout).toMatch(/actor\.avg_level\s+= "token".*\(token \| sequence \| token-mean \| /);
    expect(r.stdout).toContain(
      '| token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm)',
    );
    expect(r.stdout).toMatch(/kl\.type\s+= null.*\(reward \| advantage \| loss \| null\)/);
    expect(r.stdout).toMatch(/kl\.loss_estimator\s+= "k2".*\(k1 \| k2 \| k3\)/);
    expect(r.stdout).toMatch(/kl\.target\s+= null.*adaptive KL/);
    expect(r.stdout).toMatch(/kl\.horizon\s+= 10000/);
    expect(r.stdout).toMatch(/actor\.tis_coef\s+= 0/);
    // the CLI README's example of a bad value
    const bad = await rl2([
      'ppo',
      'actor.model_name=m',
      'data.train.path=t.jsonl',
      'rollout.env_path=env.mjs',
      'actor.loss=kimi',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'actor.loss: Invalid option: expected one of "ppo"|"gspo", got "kimi" (from the command line; set actor.loss=... to fix)',
    );
  });
  it('top-level help lists the commands; an unknown command fails', async () => {
    const r = await rl2([]);
    expect(r.code).toBe(0);
    for (const c of ['sft', 'rm', 'dpo', 'init-model', 'report']) expect(r.stdout).toContain(c);
    const bad = await rl2(['spf']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('unknown command "spf"');
  });
});

describe('config errors', () => {
  it('an unknown key names the closest valid key', async () => {
    const r = await rl2([
      'sft',
      'actor.model_name=m',
      'data.train.path=x',
      'actor.weight_decy=0.1',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('unknown config key "actor.weight_decy"');
    expect(r.stderr).toContain('did you mean "actor.weight_decay"');
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
  it('a bad value names the key, the value and where it came from', async () => {
    const dir = tmp('cfg');
    const file = join(dir, 'rm.yaml');
    writeFileSync(file, 'critic:\n  model_name: m\n  lr: -1\ndata:\n  train:\n    path: x.jsonl\n');
    const r = await rl2(['rm', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('critic.lr');
    expect(r.stderr).toContain(file);
    const missing = await rl2(['dpo', 'data.train.path=x']);
    expect(missing.stderr).toContain('actor.model_name');
  });
  it('--dry-run prints the resolved, interpolated config', async () => {
    const r = await rl2([
      'rm',
      '--dry-run',
      'critic.model_name=/m',
      'data.train.path=t.jsonl',
      'data.train.max_length=64',
      'trainer.experiment_name=x',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('save_dir: ckpts/x');
    expect(r.stdout).toMatch(/test:\n(\s+\S.*\n)*?\s+max_length: 64/);
  });
});

describe('rl2 init-model', () => {
  it.each(['llama', 'qwen2', 'qwen3'] as const)(
    'writes a %s checkpoint with the tokenizer',
    async (arch) => {
      const out = join(tmp('init'), arch);
      const r = await rl2([
        'init-model',
        '--arch',
        arch,
        '--tokenizer',
        EXAMPLE_TOKENIZER,
        '--out',
        out,
        '--hidden-size',
        '16',
        '--layers',
        '1',
        '--heads',
        '2',
      ]);
      expect(r.code, r.stderr).toBe(0);
      const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
      expect(config.model_type).toBe(arch);
      expect(config.vocab_size).toBe(99);
      expect(config.eos_token_id).toBe(2);
      for (const f of [
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
        'generation_config.json',
      ])
        expect(existsSync(join(out, f))).toBe(true);
      // safetensors header: names as transformers expects them
      const buf = readFileSync(join(out, 'model.safetensors'));
      const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString());
      expect(header['model.layers.0.self_attn.q_proj.weight'].shape).toEqual([16, 16]);
      expect('model.layers.0.self_attn.q_norm.weight' in header).toBe(arch === 'qwen3');
      expect('model.layers.0.self_attn.q_proj.bias' in header).toBe(arch === 'qwen2');
    },
  );
  it('finds the bundled Qwen3 tokenizer by name', async () => {
    const out = join(tmp('init'), 'q3');
    const r = await rl2([
      'init-model',
      '--tokenizer',
      'qwen3',
      '--out',
      out,
      '--hidden-size',
      '8',
      '--layers',
      '1',
      '--heads',
      '2',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).vocab_size).toBe(151669);
  });
  it('--dtype and --max-shard-size: bf16 shards with an index, as save_pretrained writes them', async () => {
    const out = join(tmp('init'), 'sharded');
    const r = await rl2([
      'init-model',
      '--tokenizer',
      EXAMPLE_TOKENIZER,
      '--out',
      out,
      '--hidden-size',
      '16',
      '--layers',
      '2',
      '--heads',
      '2',
      '--dtype',
      'bfloat16',
      '--max-shard-size',
      '2KB',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).torch_dtype).toBe('bfloat16');
    const index = JSON.parse(readFileSync(join(out, 'model.safetensors.index.json'), 'utf8'));
    const files = [...new Set(Object.values(index.weight_map) as string[])].sort();
    expect(files.length).toBeGreaterThan(1);
    expect(files[0]).toBe(`model-00001-of-${String(files.length).padStart(5, '0')}.safetensors`);
    const buf = readFileSync(join(out, files[0]!));
    const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString());
    expect(
      Object.values(header)
        .filter((v) => (v as { dtype?: string }).dtype)
        .every((v) => (v as { dtype: string }).dtype === 'BF16'),
    ).toBe(true);
    const bad = await rl2([
      'init-model',
      '--tokenizer',
      EXAMPLE_TOKENIZER,
      '--out',
      tmp('x'),
      '--dtype',
      'int8',
    ]);
    expect(bad.stderr).toContain(
      '--dtype int8 is not a checkpoint dtype; use one of float32, bfloat16, float16',
    );
    const size = await rl2([
      'init-model',
      '--tokenizer',
      EXAMPLE_TOKENIZER,
      '--out',
      tmp('x'),
      '--max-shard-size',
      'lots',
    ]);
    expect(size.stderr).toContain('--max-shard-size=lots is not a size');
  });
  it('explains missing flags and bad shapes', async () => {
    expect((await rl2(['init-model', '--tokenizer', EXAMPLE_TOKENIZER])).stderr).toContain('--out');
    const r = await rl2([
      'init-model',
      '--tokenizer',
      EXAMPLE_TOKENIZER,
      '--out',
      tmp('x'),
      '--hidden-size',
      '10',
      '--heads',
      '3',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('divisible');
  });
});

describe('bad data', () => {
  const base = (train: string, model: string, save: string) => [
    'sft',
    `actor.model_name=${model}`,
    `data.train.path=${train}`,
    `trainer.save_dir=${save}`,
    'trainer.progress=none',
  ];
  it('names the file and row of a malformed row, and the missing key', async () => {
    const dir = tmp('bad');
    const model = join(dir, 'model');
    await initTinyModel(model, 8);
    const file = join(dir, 'train.jsonl');
    writeFileSync(file, '{"prompt": "1+1=", "response": "2"}\n{"prompt": "2+2="}\n');
    const r = await rl2(base(file, model, join(dir, 'run')));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/row 2|line 2/);
    expect(r.stderr).toContain('response');

    writeFileSync(file, '{"prompt": "1+1=", "response": "2"}\n{not json\n');
    const broken = await rl2(base(file, model, join(dir, 'run')));
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(file);

    const missing = await rl2(base(join(dir, 'nope.jsonl'), model, join(dir, 'run')));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('data.train.path');
  });
  it('a sequence longer than max_length_per_device names the row and the key', async () => {
    const dir = tmp('long');
    const model = join(dir, 'model');
    await initTinyModel(model, 8);
    const files = writeTinyData(dir);
    const r = await rl2([
      ...base(files.sftTrain, model, join(dir, 'run')),
      'actor.max_length_per_device=10',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/sft-train\.jsonl row \d+.*actor\.max_length_per_device=10/);
  });
  it('a missing model folder names actor.model_name', async () => {
    const dir = tmp('nomodel');
    const files = writeTinyData(dir);
    const r = await rl2(base(files.sftTrain, join(dir, 'absent'), join(dir, 'run')));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('actor.model_name');
  });
});

describe('rl2 report', () => {
  it('writes report.html from metrics.jsonl, and names a wrong folder', async () => {
    const dir = tmp('report');
    writeFileSync(
      join(dir, 'metrics.jsonl'),
      '{"step":1,"time":0,"train/loss":2}\n{"step":2,"time":1,"train/loss":1}\n',
    );
    const r = await rl2(['report', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'report.html'), 'utf8')).toContain('train/loss');
    const bad = await rl2(['report', join(dir, 'nope')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('metrics.jsonl');
  });
});
