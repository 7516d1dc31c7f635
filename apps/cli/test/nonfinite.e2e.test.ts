import { existsSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';

let dir: string;
let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  dir = tmp('nonfinite');
  model = join(dir, 'model');
  data = writeTinyData(dir);
  await initTinyModel(model);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 8 rows in batches of 4, a checkpoint every step; actor.lr=1e6 makes step 3's gradient norm NaN. */
const sft = (saveDir: string, extra: string[] = []) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${data.sftTrain}`,
  `data.test.path=${data.sftTest}`,
  'data.train.batch_size=4',
  'trainer.n_epochs=3',
  'trainer.save_freq=1',
  `trainer.save_dir=${saveDir}`,
  'trainer.progress=lines',
  'trainer.threads=1',
  'trainer.report=false',
  'trainer.use_tensorboard=false',
  'actor.lr=1e6',
  'actor.warmup_ratio=0',
  'actor.max_length_per_device=128',
  ...extra,
];

const records = (saveDir: string) =>
  readFileSync(join(saveDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | null>);

/** Every weight of a checkpoint's model.safetensors (F32 or BF16) read back as numbers. */
function weights(checkpoint: string): number[] {
  const buf = readFileSync(join(checkpoint, 'model', 'model.safetensors'));
  const headerLength = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8')) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const out: number[] = [];
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const bytes = buf.subarray(
      8 + headerLength + t.data_offsets[0],
      8 + headerLength + t.data_offsets[1],
    );
    for (let i = 0; i < bytes.length; i += t.dtype === 'F32' ? 4 : 2)
      out.push(
        t.dtype === 'F32'
          ? bytes.readFloatLE(i)
          : new Float32Array(Uint32Array.of(bytes.readUInt16LE(i) << 16).buffer)[0],
      );
  }
  return out;
}

describe('trainer.on_nonfinite (a NaN/Inf loss or gradient norm)', () => {
  it('stop (the default): exit 1 naming the step and the key, nothing saved after it, latest on the last finite checkpoint', async () => {
    const saveDir = join(dir, 'stop');
    const r = await rl2(sft(saveDir));
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toMatch(/step 3: train\/grad_norm is NaN; its update was not applied/);
    expect(r.stderr).toMatch(/trainer\.on_nonfinite=stop\), latest stays on .*step-2/);
    expect(r.stderr).toContain('trainer.on_nonfinite=skip');
    expect(r.stdout).not.toMatch(/^done/m);
    expect(readlinkSync(join(saveDir, 'latest'))).toBe('step-2');
    expect(existsSync(join(saveDir, 'step-3'))).toBe(false);
    expect(weights(join(saveDir, 'step-2')).every(Number.isFinite)).toBe(true);
    // the step is on record, with its NaN (null in JSON)
    expect(
      records(saveDir).find((x) => x.step === 3 && 'train/grad_norm' in x)?.['train/grad_norm'],
    ).toBeNull();
  });

  it('skip: each such update is left out and counted in train/nonfinite_skips; the run ends with finite weights', async () => {
    const saveDir = join(dir, 'skip');
    const r = await rl2(sft(saveDir, ['trainer.on_nonfinite=skip']));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/step 3: train\/grad_norm is NaN: update skipped \(1 so far\)/);
    const train = records(saveDir).filter((x) => x['train/loss'] !== undefined);
    expect(train.map((x) => x['train/nonfinite_skips'] ?? 0)).toEqual([0, 0, 1, 2, 3, 4]);
    const last = weights(join(saveDir, 'step-6'));
    expect(last.every(Number.isFinite)).toBe(true);
    // no skipped update touched the weights: they are step 2's
    expect(last).toEqual(weights(join(saveDir, 'step-2')));
  });
});
