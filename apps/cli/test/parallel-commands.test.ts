import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rankCommand } from '../src/commands/launch-command.js';
import { initTinyModel, metricRecords, rl2, tmp, trainLosses, writeTinyData } from './helpers.js';

// Qwen2.5-0.5B: 494,032,768 parameters (its published count), tied embeddings
const qwen05b = {
  model_type: 'qwen2',
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  tie_word_embeddings: true,
};

describe('rl2 plan', () => {
  it('prints per-device bytes: 0.5B on 2 devices (fsdp 2) stores 247,016,384 parameters each', async () => {
    const dir = tmp('plan');
    writeFileSync(join(dir, 'config.json'), JSON.stringify(qwen05b));
    const r = await rl2([
      'plan',
      `model=${dir}`,
      'gpus=2',
      'max_length_per_device=1024',
      'device_memory_gib=80',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('0.49B parameters; 247,016,384 stored per device');
    expect(r.stdout).toContain(
      'layout: 2 devices = ddp 1 x fsdp 2 x tp 1 (model), dp 2 x cp 1 x tp 1 (data)',
    );
    // float32: 247,016,384 * 4 B = 0.92 GiB of weights and of gradients; AdamW m + v = 8 B each = 1.84 GiB
    expect(r.stdout).toMatch(/parameters\s+0\.92 GiB/);
    expect(r.stdout).toMatch(/gradients\s+0\.92 GiB/);
    expect(r.stdout).toMatch(/optimizer state\s+1\.84 GiB/);
    expect(r.stdout).toMatch(/activations\s+\d+\.\d\d GiB/);
    expect(r.stdout).toContain('fits in 80.00 GiB');
    // tiled attention (the default) plans a log-sum-exp per query and head, not 14 x 1024 x 1024 scores
    expect(r.stdout).toMatch(/attention \(tiled, lse\)\s+0\.00 GiB/);
    const full = await rl2([
      'plan',
      `model=${dir}`,
      'gpus=2',
      'max_length_per_device=1024',
      'tiled_attention=false',
    ]);
    expect(full.stdout).toMatch(/attention scores\s+0\.11 GiB/);
  });

  it('tp and ddp change the layout; a config.json path works too', async () => {
    const file = join(tmp('plan'), 'qwen.json');
    writeFileSync(file, JSON.stringify(qwen05b));
    const r = await rl2(['plan', `model=${file}`, 'gpus=8', 'tp=2', 'ddp=2', 'dtype=bfloat16']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      'layout: 8 devices = ddp 2 x fsdp 2 x tp 2 (model), dp 4 x cp 1 x tp 2 (data)',
    );
  });

  it('errors name the key or the layout rule', async () => {
    const dir = tmp('plan');
    writeFileSync(join(dir, 'config.json'), JSON.stringify(qwen05b));
    const unknown = await rl2(['plan', `model=${dir}`, 'gpus=2', 'pt=2']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('"pt=2" is not a key=value with a known key');
    const heads = await rl2(['plan', `model=${dir}`, 'gpus=4', 'tp=4']);
    expect(heads.code).toBe(1);
    expect(heads.stderr).toMatch(/num_attention_heads=14 is not divisible by tp=4/);
    const missing = await rl2(['plan', `model=${join(dir, 'nope')}`, 'gpus=2']);
    expect(missing.stderr).toContain('does not exist');
    expect((await rl2(['plan', `model=${dir}`])).stderr).toContain('needs gpus=N');
  });
});

const port = () => String(20000 + Math.floor(Math.random() * 12000));

describe('rl2 launch', () => {
  const node = process.execPath;

  it('runs the command once per rank with the torchrun environment, output prefixed', async () => {
    const r = await rl2([
      'launch',
      '--nproc-per-node',
      '2',
      '--master-port',
      port(),
      '--',
      node,
      '-e',
      'console.log(`hello ${process.env.RANK}/${process.env.WORLD_SIZE} local ${process.env.LOCAL_RANK}`)',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('[rank 0] hello 0/2 local 0');
    expect(r.stdout).toContain('[rank 1] hello 1/2 local 1');
  });

  it('a failing rank stops every rank; its error and exit code come back', async () => {
    const script =
      "if (process.env.RANK === '1') { console.error('boom on rank 1'); process.exit(3); } setTimeout(() => {}, 60000);";
    const began = Date.now();
    const r = await rl2([
      'launch',
      '--nproc-per-node',
      '2',
      '--master-port',
      port(),
      '--',
      node,
      '-e',
      script,
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('rank 1 failed with exit code 3; every other rank was stopped.');
    expect(r.stderr).toContain('boom on rank 1');
    expect(Date.now() - began).toBeLessThan(30000); // rank 0 (sleeping 60 s) was stopped
  });

  it('flag errors say what to fix', async () => {
    expect((await rl2(['launch', '--', node, '-e', '0'])).stderr).toContain(
      'needs --nproc-per-node N',
    );
    expect((await rl2(['launch', '--nproc-per-node', '2'])).stderr).toContain(
      'needs the command after --',
    );
    expect(
      (
        await rl2([
          'launch',
          '--nproc-per-node',
          '2',
          '--nnodes',
          '2',
          '--node-rank',
          '2',
          '--',
          node,
        ])
      ).stderr,
    ).toContain('nodeRank=2 must be < nnodes=2');
  });

  it('a leading rl2 runs this CLI itself when it runs as its own script', () => {
    const self = {
      execPath: '/usr/bin/node',
      execArgv: ['--import', 'tsx'],
      script: '/x/apps/cli/dist/cli.js',
    };
    expect(rankCommand(['rl2', 'sft', 'a=1'], self)).toEqual([
      '/usr/bin/node',
      '--import',
      'tsx',
      '/x/apps/cli/dist/cli.js',
      'sft',
      'a=1',
    ]);
    expect(
      rankCommand(['rl2', 'sft'], { ...self, script: '/x/node_modules/vitest/vitest.mjs' }),
    ).toEqual(['rl2', 'sft']);
    expect(rankCommand(['python3', 'train.py'], self)).toEqual(['python3', 'train.py']);
  });
});

describe('rl2 launch -- rl2 sft (data parallel through the CLI)', () => {
  it('2 ranks train with the one-process losses; only rank 0 prints progress and writes metrics', async () => {
    const dir = tmp('launch-sft');
    const model = join(dir, 'model');
    const data = writeTinyData(dir);
    await initTinyModel(model);
    const sft = (saveDir: string) => [
      'sft',
      `actor.model_name=${model}`,
      `data.train.path=${data.sftTrain}`,
      `data.test.path=${data.sftTest}`,
      'data.train.batch_size=8',
      'trainer.max_steps=2',
      'trainer.n_epochs=2',
      `trainer.save_dir=${saveDir}`,
      'trainer.progress=lines',
      'trainer.backend=cpu',
      'trainer.threads=1',
      'trainer.report=false',
      'actor.lr=1e-2',
      'actor.warmup_ratio=0',
      'actor.max_length_per_device=40',
    ];
    const one = await rl2(sft(join(dir, 'one')));
    expect(one.code, one.stderr).toBe(0);
    // ranks run this CLI from source: tsx, plus @rl2/* resolved to packages/*/src (as vitest does)
    const hooks = resolve(
      import.meta.dirname,
      '../../../packages/trainers/test/ranks/register-source.mjs',
    );
    const self = [
      process.execPath,
      '--import',
      'tsx',
      '--import',
      hooks,
      resolve(import.meta.dirname, '../src/cli.ts'),
    ];
    const two = await rl2([
      'launch',
      '--nproc-per-node',
      '2',
      '--master-port',
      port(),
      '--',
      ...self,
      ...sft(join(dir, 'two')),
    ]);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toContain('data parallel over 2 ranks');
    expect(two.stdout).toMatch(/\[rank 0\] step 2\/2 100% loss/);
    expect(two.stdout).not.toMatch(/\[rank 1\] step/);
    const [a, b] = [trainLosses(join(dir, 'one')), trainLosses(join(dir, 'two'))];
    expect([...b.keys()]).toEqual([1, 2]);
    for (const [step, loss] of a)
      expect(Math.abs((b.get(step) as number) - loss) / loss, `step ${step}`).toBeLessThan(1e-5);
    // validation (test bins split over the ranks, sums all-reduced) gives the one-process test loss
    const testLoss = (run: string) =>
      metricRecords(join(dir, run))
        .filter((r) => r['test/loss'] !== undefined)
        .map((r) => r['test/loss'] as number);
    const [ta, tb] = [testLoss('one'), testLoss('two')];
    expect(ta.length).toBeGreaterThanOrEqual(2);
    expect(tb).toHaveLength(ta.length);
    ta.forEach((l, i) => {
      expect(Math.abs((tb[i] as number) - l) / l, `validation ${i}`).toBeLessThan(1e-5);
    });
  }, 60_000);
});
