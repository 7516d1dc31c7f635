import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, QUIET_RUN, rl2, tmp, writeTinyData } from './helpers.js';

// A save killed mid-way (SIGKILL, OOM, a node lost) leaves its work folder beside the checkpoints;
// these used to stay for ever, even after a resume. They are named as the savers name them, by a
// process that is gone.
const GONE = 999_999_999;
let dir: string;
let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  dir = tmp('stale-saves');
  model = join(dir, 'model');
  data = writeTinyData(dir);
  await initTinyModel(model);
});

const sft = (saveDir: string, extra: string[]) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${data.sftTrain}`,
  `data.test.path=${data.sftTest}`,
  'data.train.batch_size=4',
  `trainer.save_dir=${saveDir}`,
  ...QUIET_RUN,
  ...extra,
];

/** What a save of step `step` killed while writing leaves: its half-written folder and the `latest` link's temp link. */
function plantKilledSave(saveDir: string, step: number): string[] {
  const names = [`.tmp-${GONE}-1700000000000-step-${step}`, `.tmp-${GONE}-1700000000001-latest`];
  mkdirSync(join(saveDir, names[0] as string, 'model'), { recursive: true });
  writeFileSync(join(saveDir, names[0] as string, 'model', 'model.safetensors'), 'half a file');
  symlinkSync(`step-${step}`, join(saveDir, names[1] as string));
  return names;
}

describe('unfinished saves left by a killed run', () => {
  it('are removed when the run resumes, and said so', async () => {
    const saveDir = join(dir, 'resumed');
    const first = await rl2(sft(saveDir, ['trainer.max_steps=1']));
    expect(first.code, first.stderr).toBe(0);
    const left = plantKilledSave(saveDir, 2);
    const resumed = await rl2(
      sft(saveDir, ['trainer.max_steps=2', 'trainer.load_ckpt_from=latest']),
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(
      `rl2 sft: removed 2 unfinished save(s) left in ${saveDir} by a killed run: ${left.join(', ')}`,
    );
    expect(resumed.stdout).toContain('resuming from');
    expect(readdirSync(saveDir).filter((n) => n.startsWith('.'))).toEqual([]);
  }, 60_000);

  it('are removed when a run starts afresh in the folder (rl2 ppo too)', async () => {
    const saveDir = join(dir, 'fresh');
    mkdirSync(saveDir);
    plantKilledSave(saveDir, 7);
    const prompts = join(dir, 'prompts.jsonl');
    writeFileSync(
      prompts,
      `${JSON.stringify({ messages: [{ role: 'user', content: '1+2=' }], answer: 3 })}\n`,
    );
    const env = join(dir, 'env.mjs');
    writeFileSync(env, 'export async function step() { return [null, 1, true]; }\n');
    const r = await rl2([
      'ppo',
      `actor.model_name=${model}`,
      `data.train.path=${prompts}`,
      `data.test.path=${prompts}`,
      `rollout.env_path=${env}`,
      'rollout.train_prompts_per_rollout=1',
      'rollout.responses_per_prompt=2',
      'rollout.train_sampling_params.max_new_tokens=2',
      'trainer.test_freq=null',
      'trainer.max_steps=1',
      `trainer.save_dir=${saveDir}`,
      ...QUIET_RUN,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('rl2 ppo: removed 2 unfinished save(s)');
    expect(readdirSync(saveDir).filter((n) => n.startsWith('.'))).toEqual([]);
  }, 60_000);
});
