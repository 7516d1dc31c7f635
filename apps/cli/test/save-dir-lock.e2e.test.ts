import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET_RUN, initTinyModel, rl2, tmp, writeTinyData } from './helpers.js';
import { spawnCli } from './spawn-cli.js';

// Two runs with the same trainer.save_dir used to both exit 0, their metrics rows interleaved,
// step-N folders from either and config.yaml describing one of them. Now the first holds
// save_dir/rl2.lock and the second fails at start.
let dir: string;
let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  dir = tmp('lock');
  model = join(dir, 'model');
  data = writeTinyData(dir);
  await initTinyModel(model);
  writeFileSync(
    join(dir, 'prompts.jsonl'),
    `${JSON.stringify({ messages: [{ role: 'user', content: '1+2=' }], answer: 3 })}\n`,
  );
  writeFileSync(join(dir, 'env.mjs'), 'export async function step() { return [null, 1, true]; }\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sft = (saveDir: string, extra: string[]) => [
  'sft',
  `actor.model_name=${model}`,
  `data.train.path=${data.sftTrain}`,
  `data.test.path=${data.sftTest}`,
  'data.train.batch_size=2',
  `trainer.save_dir=${saveDir}`,
  'trainer.backend=cpu',
  ...QUIET_RUN,
  ...extra,
];

const ppo = (saveDir: string) => [
  'ppo',
  `actor.model_name=${model}`,
  `data.train.path=${join(dir, 'prompts.jsonl')}`,
  `data.test.path=${join(dir, 'prompts.jsonl')}`,
  `rollout.env_path=${join(dir, 'env.mjs')}`,
  'rollout.train_prompts_per_rollout=1',
  'rollout.responses_per_prompt=2',
  'rollout.train_sampling_params.max_new_tokens=2',
  'trainer.test_freq=null',
  'trainer.max_steps=1',
  `trainer.save_dir=${saveDir}`,
  ...QUIET_RUN,
];

describe('one run per trainer.save_dir', () => {
  it('a second run (sft or ppo) fails at start naming the folder and the pid; Ctrl-C of the first frees it', async () => {
    const saveDir = join(dir, 'shared');
    const lock = join(saveDir, 'rl2.lock');
    let second: Promise<Awaited<ReturnType<typeof rl2>>[]> | undefined;
    const first = spawnCli(sft(saveDir, ['trainer.n_epochs=1000']), (out, child) => {
      if (second || !/step 1\//.test(out)) return;
      second = Promise.all([rl2(sft(saveDir, ['trainer.max_steps=1'])), rl2(ppo(saveDir))]);
      second.finally(() => child.kill('SIGINT'));
    });
    const code = await first.exited;
    expect(second, first.output()).toBeDefined();
    const pid = first.child.pid as number;
    for (const r of (await second) ?? []) {
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `rl2: trainer.save_dir=${saveDir} is in use by another run: pid ${pid} on this host`,
      );
    }
    expect(code, first.output()).toBe(130); // the first run saved and stopped as usual
    expect(readFileSync(join(saveDir, 'config.yaml'), 'utf8')).toContain('n_epochs: 1000');
    expect(existsSync(lock)).toBe(false); // released on the way out
    const after = await rl2(sft(saveDir, ['trainer.max_steps=1']));
    expect(after.code, after.stderr).toBe(0);
    expect(existsSync(lock)).toBe(false);
  }, 120_000);

  it('a lock left by a process that is gone is taken over with a notice', async () => {
    const saveDir = join(dir, 'stale');
    const r0 = await rl2(sft(saveDir, ['trainer.max_steps=1']));
    expect(r0.code, r0.stderr).toBe(0);
    const lock = join(saveDir, 'rl2.lock');
    const gone = 999_999_999;
    writeFileSync(
      lock,
      JSON.stringify({ pid: gone, host: hostname(), started: '2026-01-01T00:00:00Z', token: 'x' }),
    );
    const r = await rl2(sft(saveDir, ['trainer.max_steps=1']));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`rl2 sft: took over the lock ${lock} of pid ${gone}`);
    expect(existsSync(lock)).toBe(false);
  }, 60_000);
});
