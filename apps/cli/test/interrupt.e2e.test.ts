import { existsSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initTinyModel, QUIET_RUN, tmp, writeTinyData } from './helpers.js';
import { spawnCli } from './spawn-cli.js';

// The real process, from source: a signal is delivered through the event loop, which an
// in-process AbortController cannot test. SIGTERM is what Slurm and Kubernetes send before they
// stop a job; it used to kill training at once, with no checkpoint.
let dir: string;
let model: string;
let data: ReturnType<typeof writeTinyData>;

beforeAll(async () => {
  dir = tmp('signals');
  model = join(dir, 'model');
  data = writeTinyData(dir);
  await initTinyModel(model);
  const prompts = `${['1+2=', '3+4=', '5+6=', '7+8=']
    .map((q) => JSON.stringify({ messages: [{ role: 'user', content: q }], answer: 0 }))
    .join('\n')}\n`;
  writeFileSync(join(dir, 'prompts.jsonl'), prompts);
  writeFileSync(
    join(dir, 'env.mjs'),
    'export async function step(state, action) { return [null, action.length % 2, true]; }\n',
  );
});

type Trainer = 'sft' | 'rm' | 'dpo' | 'ppo';

/** A run of `kind` long enough to be stopped by a signal (thousands of steps). */
function longRun(kind: Trainer, saveDir: string, extra: string[] = []): string[] {
  const common = [`trainer.save_dir=${saveDir}`, 'trainer.backend=cpu', ...QUIET_RUN, ...extra];
  if (kind === 'ppo') {
    const prompts = join(dir, 'prompts.jsonl');
    return [
      'ppo',
      `actor.model_name=${model}`,
      `data.train.path=${prompts}`,
      `data.test.path=${prompts}`,
      `rollout.env_path=${join(dir, 'env.mjs')}`,
      'rollout.train_prompts_per_rollout=2',
      'rollout.responses_per_prompt=2',
      'rollout.train_sampling_params.max_new_tokens=4',
      'trainer.test_freq=null',
      'trainer.n_epochs=1000',
      ...common,
    ];
  }
  const key = kind === 'rm' ? 'critic' : 'actor';
  const [train, test] =
    kind === 'sft' ? [data.sftTrain, data.sftTest] : [data.pairTrain, data.pairTest];
  return [
    kind,
    `${key}.model_name=${model}`,
    `data.train.path=${train}`,
    `data.test.path=${test}`,
    'data.train.batch_size=2',
    'trainer.n_epochs=1000',
    ...common,
  ];
}

const savedStep = (saveDir: string) => join(saveDir, readlinkSync(join(saveDir, 'latest')));

describe.each(['sft', 'rm', 'dpo', 'ppo'] as const)('SIGTERM during rl2 %s', (kind) => {
  it('finishes the step, saves a checkpoint, says how to resume and exits with 143 (128 + SIGTERM)', async () => {
    const saveDir = join(tmp(`sigterm-${kind}`), 'run');
    let sent = false;
    const run = spawnCli(longRun(kind, saveDir), (out, child) => {
      if (!sent && /step 2\//.test(out)) {
        sent = true;
        child.kill('SIGTERM');
      }
    });
    const code = await run.exited;
    expect(sent, run.output()).toBe(true);
    expect(code, run.output()).toBe(143);
    expect(run.output()).toContain(
      'rl2: got SIGTERM; saving a checkpoint after this step (SIGTERM again to quit without saving)',
    );
    expect(run.output()).toMatch(
      /interrupted at step \d+\/\d+; resume with trainer.load_ckpt_from=latest/,
    );
    expect(existsSync(join(savedStep(saveDir), 'trainer_state.json'))).toBe(true);
    expect(existsSync(join(saveDir, 'rl2.lock'))).toBe(false); // the run folder is free again
  }, 120_000);
});

describe('Ctrl-C during rl2 sft', () => {
  it('finishes the step, saves a checkpoint and exits with 130', async () => {
    const saveDir = join(tmp('sigint'), 'run');
    let sent = false;
    const run = spawnCli(longRun('sft', saveDir), (out, child) => {
      if (!sent && /step 2\//.test(out)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    const code = await run.exited;
    expect(sent, run.output()).toBe(true);
    expect(code, run.output()).toBe(130);
    expect(run.output()).toMatch(
      /interrupted at step \d+\/4000; resume with trainer.load_ckpt_from=latest/,
    );
    expect(existsSync(join(savedStep(saveDir), 'trainer_state.json'))).toBe(true);
  }, 120_000);
});

describe('a second signal', () => {
  it('quits at once, without waiting for the step (an env step() that takes 10 minutes) or saving', async () => {
    const slowEnv = join(dir, 'slow-env.mjs');
    writeFileSync(
      slowEnv,
      'export async function step() { console.log("env step began"); await new Promise((r) => ' +
        'setTimeout(r, 600_000)); return [null, 0, true]; }\n',
    );
    const saveDir = join(tmp('second-signal'), 'run');
    let first = false;
    let second = false;
    const run = spawnCli(
      longRun('ppo', saveDir, [`rollout.env_path=${slowEnv}`, 'rollout.env_timeout_s=1000']),
      (out, child) => {
        if (!first && out.includes('env step began')) {
          first = true;
          child.kill('SIGTERM');
        }
        if (first && !second && out.includes('rl2: got SIGTERM')) {
          second = true;
          child.kill('SIGTERM');
        }
      },
    );
    const code = await run.exited;
    expect(second, run.output()).toBe(true);
    expect(code, run.output()).toBe(143);
    expect(run.output()).not.toContain('interrupted at step');
    expect(existsSync(join(saveDir, 'latest'))).toBe(false);
    expect(existsSync(join(saveDir, 'rl2.lock'))).toBe(false); // released by the exit, too
  }, 120_000);
});

describe('SIGTERM to rl2 launch', () => {
  it('is passed on to every rank: they finish the step, save one checkpoint, and launch exits with 143', async () => {
    const saveDir = join(tmp('sigterm-launch'), 'run');
    const port = String(20000 + Math.floor(Math.random() * 12000));
    let sent = false;
    // a leading `rl2` runs this same CLI (from source) on every rank
    const run = spawnCli(
      [
        'launch',
        '--nproc-per-node',
        '2',
        '--master-port',
        port,
        '--',
        'rl2',
        ...longRun('sft', saveDir),
      ],
      (out, child) => {
        if (!sent && /\[rank 0\] step 2\//.test(out)) {
          sent = true;
          child.kill('SIGTERM');
        }
      },
    );
    const code = await run.exited;
    expect(sent, run.output()).toBe(true);
    expect(code, run.output()).toBe(143);
    expect(run.output()).toContain(
      'rl2 launch: launch got SIGTERM; every rank was asked to stop (trainers save a checkpoint first).',
    );
    expect(run.output()).toMatch(
      /\[rank 0\] interrupted at step \d+\/\d+; resume with trainer.load_ckpt_from=latest/,
    );
    expect(existsSync(join(savedStep(saveDir), 'trainer_state.json'))).toBe(true);
  }, 120_000);
});
