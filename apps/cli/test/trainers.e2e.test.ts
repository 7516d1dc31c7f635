import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, rl2, tmp, trainLosses, writeTinyData } from './helpers.js';

let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  const dir = tmp('e2e');
  model = join(dir, 'model');
  data = writeTinyData(dir);
  await initTinyModel(model);
});

/** Common overrides: 8 train rows, batches of 4, 3 epochs = 6 steps, plain progress lines. */
function args(kind: 'sft' | 'rm' | 'dpo', saveDir: string, extra: string[] = []) {
  const modelKey = kind === 'rm' ? 'critic' : 'actor';
  const [train, test] =
    kind === 'sft' ? [data.sftTrain, data.sftTest] : [data.pairTrain, data.pairTest];
  return [
    kind,
    `${modelKey}.model_name=${model}`,
    `data.train.path=${train}`,
    `data.test.path=${test}`,
    'data.train.batch_size=4',
    'trainer.n_epochs=3',
    `trainer.save_dir=${saveDir}`,
    'trainer.progress=lines',
    'trainer.threads=1',
    `${modelKey}.lr=${kind === 'sft' ? '1e-2' : '3e-3'}`,
    `${modelKey}.warmup_ratio=0`,
    `${modelKey}.max_length_per_device=128`,
    ...extra,
  ];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe.each(['sft', 'rm', 'dpo'] as const)('rl2 %s end to end', (kind) => {
  it('loss falls, checkpoints reload, and an interrupted + resumed run matches an uninterrupted one', async () => {
    const full = tmp(`${kind}-full`);
    const a = await rl2(args(kind, full));
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/validation @ step 2 \(epoch 1\)/);
    const lossA = trainLosses(full);
    expect([...lossA.keys()]).toEqual([1, 2, 3, 4, 5, 6]);
    const losses = [...lossA.values()];
    expect(mean(losses.slice(4))).toBeLessThan(mean(losses.slice(0, 2)));
    for (const f of [
      'config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]) {
      expect(existsSync(join(full, 'step-6', 'model', f)), f).toBe(true);
    }
    expect(existsSync(join(full, 'step-6', 'optimizer.safetensors'))).toBe(true);
    expect(existsSync(join(full, 'latest', 'model', 'config.json'))).toBe(true);
    expect(readFileSync(join(full, 'report.html'), 'utf8')).toContain('<svg');

    // Ctrl-C while step 3 is printed (mid epoch 2): saves step-3 and exits with 130.
    const parted = tmp(`${kind}-parted`);
    const controller = new AbortController();
    const b = await rl2(args(kind, parted), {
      signal: controller.signal,
      onStdout: (t) => t.startsWith('step 3/') && controller.abort(),
    });
    expect(b.code, b.stderr).toBe(130);
    expect(b.stdout).toContain('resume with trainer.load_ckpt_from=latest');
    expect(existsSync(join(parted, 'step-3', 'trainer_state.json'))).toBe(true);
    expect(existsSync(join(parted, 'step-6'))).toBe(false);

    const c = await rl2(args(kind, parted, ['trainer.load_ckpt_from=latest']));
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toContain('at step 3');
    const lossB = trainLosses(parted);
    expect([...lossB.keys()]).toEqual([1, 2, 3, 4, 5, 6]);
    for (const [step, loss] of lossA) expect(lossB.get(step), `step ${step}`).toBeCloseTo(loss, 6);
  });
});

describe('a trained checkpoint is a model folder', () => {
  it('DPO starts from the SFT checkpoint (actor.model_name=<save_dir>/step-N/model), saved as bf16 shards', async () => {
    const sftDir = tmp('chain-sft');
    const sft = await rl2(
      args('sft', sftDir, [
        'trainer.n_epochs=1',
        'trainer.report=false',
        'actor.save_dtype=bfloat16',
        'actor.max_shard_size=4KB',
      ]),
    );
    expect(sft.code, sft.stderr).toBe(0);
    const saved = join(sftDir, 'step-2', 'model');
    expect(JSON.parse(readFileSync(join(saved, 'config.json'), 'utf8')).torch_dtype).toBe(
      'bfloat16',
    );
    const shards = new Set(
      Object.values(
        JSON.parse(readFileSync(join(saved, 'model.safetensors.index.json'), 'utf8')).weight_map,
      ),
    );
    expect(shards.size).toBeGreaterThan(1);
    expect(existsSync(join(saved, 'tokenizer.json'))).toBe(true);
    const dpoDir = tmp('chain-dpo');
    const r = await rl2([
      ...args('dpo', dpoDir, ['trainer.n_epochs=1', 'trainer.use_tensorboard=false']),
      `actor.model_name=${join(sftDir, 'step-2', 'model')}`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(trainLosses(dpoDir).size).toBe(2);
  });
});
