import { existsSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET_RUN, initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';

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
    const [, step] =
      /step (\d+): train\/grad_norm is NaN; its update was not applied/.exec(r.stderr) ?? [];
    expect(step, r.stderr).toBeDefined();
    const kept = `step-${Number(step) - 1}`;
    expect(r.stderr).toContain(
      `(trainer.on_nonfinite=stop), latest stays on ${join(saveDir, kept)}.`,
    );
    expect(r.stderr).toContain('Lower the learning rate (actor.lr');
    expect(r.stderr).toContain('trainer.on_nonfinite=skip');
    expect(r.stdout).not.toMatch(/^done/m);
    expect(readlinkSync(join(saveDir, 'latest'))).toBe(kept);
    expect(existsSync(join(saveDir, `step-${step}`))).toBe(false);
    expect(weights(join(saveDir, kept)).every(Number.isFinite)).toBe(true);
    // the step is on record, with its NaN (null in JSON)
    const rec = records(saveDir).find((x) => x.step === Number(step) && 'train/grad_norm' in x);
    expect(rec?.['train/grad_norm']).toBeNull();
  });

  it('rl2 ppo: the same policy on the actor update (actor/grad_norm)', async () => {
    writeFileSync(
      join(dir, 'train.jsonl'),
      `${['1+2=', '3+4=', '5+6=', '7+8=']
        .map((q) => JSON.stringify({ messages: [{ role: 'user', content: q }], answer: 0 }))
        .join('\n')}\n`,
    );
    // rewards the share of digits in the reply, so groups differ and the actor trains
    writeFileSync(
      join(dir, 'env.mjs'),
      `export async function step(state, action) {
  const chars = [...action.replace('<|im_end|>', '')];
  return [null, chars.length ? chars.filter((c) => c >= '0' && c <= '9').length / chars.length : 0, true];
}
`,
    );
    const saveDir = join(dir, 'ppo');
    const r = await rl2([
      'ppo',
      `actor.model_name=${model}`,
      `data.train.path=${join(dir, 'train.jsonl')}`,
      `rollout.env_path=${join(dir, 'env.mjs')}`,
      'rollout.train_prompts_per_rollout=2',
      'rollout.responses_per_prompt=2',
      'rollout.train_sampling_params.max_new_tokens=4',
      'actor.lr=1e6',
      'actor.warmup_ratio=0',
      'trainer.n_epochs=10',
      'trainer.save_freq=1',
      `trainer.save_dir=${saveDir}`,
      ...QUIET_RUN,
    ]);
    expect(r.code, r.stdout).toBe(1);
    const [, step, key] =
      /step (\d+): (actor\/\w+) is NaN; its update was not applied/.exec(r.stderr) ?? [];
    expect(key, r.stderr).toBeDefined();
    expect(r.stderr).toContain(`latest stays on ${join(saveDir, `step-${Number(step) - 1}`)}`);
    expect(readlinkSync(join(saveDir, 'latest'))).toBe(`step-${Number(step) - 1}`);
    expect(existsSync(join(saveDir, `step-${step}`))).toBe(false);
    expect(weights(join(saveDir, `step-${Number(step) - 1}`)).every(Number.isFinite)).toBe(true);
  });

  it('skip: each such update is left out and counted in train/nonfinite_skips; the run ends with finite weights', async () => {
    const saveDir = join(dir, 'skip');
    const r = await rl2(sft(saveDir, ['trainer.on_nonfinite=skip']));
    expect(r.code, r.stderr).toBe(0);
    const [, first] =
      /step (\d+): train\/grad_norm is NaN: update skipped \(1 so far\)/.exec(r.stdout) ?? [];
    expect(first, r.stdout).toBeDefined();
    const train = records(saveDir).filter((x) => x['train/loss'] !== undefined);
    expect(train).toHaveLength(6);
    // from the first NaN step on, every step is one (the weights stay where they were)
    expect(train.map((x) => x['train/nonfinite_skips'] ?? 0)).toEqual(
      train.map((x) => Math.max(0, Number(x.step) - Number(first) + 1)),
    );
    const last = weights(join(saveDir, 'step-6'));
    expect(last.every(Number.isFinite)).toBe(true);
    // no skipped update touched the weights: they are those of the step before the first skip
    expect(last).toEqual(weights(join(saveDir, `step-${Number(first) - 1}`)));
  });
});
