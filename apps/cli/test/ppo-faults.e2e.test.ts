import { existsSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { metricRecords, rl2, tinyPpoRun, tmp } from './helpers.js';
import { spawnCli } from './spawn-cli.js';

let tiny: Awaited<ReturnType<typeof tinyPpoRun>>;
beforeAll(async () => {
  tiny = await tinyPpoRun('ppo-faults', ['1+2=', '3+4=', '5+6=', '7+8=']);
});
const env = (name: string, source: string) => tiny.env(name, source);
const ppo = (saveDir: string, envFile: string, extra: string[] = []) =>
  tiny.args(saveDir, envFile, 20, extra);

describe('rl2 ppo stops when it trains on nothing (it used to finish, save and exit 0)', () => {
  it('an env whose step() always throws: exit 1 at the first step, naming the cause and rollout.max_failed_steps', async () => {
    // in-process (the spawned runs below show that the exit code reaches the shell)
    const saveDir = join(tmp('ppo-throws'), 'run');
    const r = await rl2(
      ppo(
        saveDir,
        env('throw-env.mjs', 'export async function step() { throw new Error("env broke"); }\n'),
      ),
    );
    expect(r.code, r.stdout).toBe(1);
    expect(r.stderr).toContain(
      'rl2: rollout step 1: all 4 samples failed (4 env errors, 0 env timeouts, 0 engine ' +
        'errors; first: sample 0 of prompt 0 failed (ENV_STEP): ',
    );
    expect(r.stderr).toContain('more than rollout.max_failed_steps=0: stopping');
    expect(existsSync(join(saveDir, 'latest')), 'no step was trained: nothing to save').toBe(false);
  }, 120_000);

  it('rollout.max_failed_steps=2 tolerates two such steps (logged, counted in the metrics) and ' +
    'stops on the third, after saving', async () => {
    const flaky = env(
      'flaky-env.mjs',
      'let n = 0;\nexport async function step() { n += 1; if (n > 4) throw new Error("env broke"); return [null, n % 2, true]; }\n',
    );
    const saveDir = join(tmp('ppo-flaky'), 'run');
    const r = await rl2(ppo(saveDir, flaky, ['rollout.max_failed_steps=2']));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'nothing to train on: 2 of rollout.max_failed_steps=2 such steps in a row tolerated',
    );
    expect(r.stderr).toContain('rollout step 4: all 4 samples failed (4 env errors');
    expect(r.stderr).toContain(
      '3 step(s) in a row without a usable sample, more than rollout.max_failed_steps=2',
    );
    expect(readlinkSync(join(saveDir, 'latest'))).toBe('step-3');
    const steps = metricRecords(saveDir).filter((m) => m['train/samples'] !== undefined);
    expect(
      steps.map((m) => [
        m.step,
        m['train/samples'],
        m['train/env_errors'],
        m['train/env_timeouts'],
        m['train/engine_errors'],
      ]),
    ).toEqual([
      [1, 4, 0, 0, 0],
      [2, 4, 4, 0, 0],
      [3, 4, 4, 0, 0],
    ]);
  }, 120_000);

  it('an SGLang server (rl2 serve) killed mid-run: exit 1 at once, naming rollout.server_urls, with the steps done saved', async () => {
    let url = '';
    const server = spawnCli(
      ['serve', '--model', tiny.model, '--port', '0', '--threads', '1'],
      (out) => {
        url ||= /ready: (http:\/\/\S+)/.exec(out)?.[1] ?? '';
      },
    );
    for (let i = 0; i < 600 && !url; i++) await new Promise((r) => setTimeout(r, 100));
    expect(url, server.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // two turns with a pause between them: the turn after the kill always asks the dead server
    const tool = env(
      'slow-tool-env.mjs',
      `export async function step(state, action) {
  await new Promise((r) => setTimeout(r, 300));
  return state.includes('<fig>') ? [null, 1, true] : [state + action + '<fig>1</fig>', 0, false];
}
`,
    );
    const saveDir = join(tmp('ppo-server-killed'), 'run');
    let killedAt = 0;
    const run = spawnCli(
      ppo(saveDir, tool, [
        'rollout.engine=sglang',
        `rollout.server_urls=["${url}"]`,
        'rollout.max_turns=2',
        'rollout.max_failed_steps=100',
      ]),
      (out) => {
        if (!killedAt && /step 1\/40/.test(out)) {
          killedAt = performance.now();
          server.child.kill('SIGKILL');
        }
      },
    );
    const code = await run.exited;
    await server.exited;
    expect(killedAt, run.output()).toBeGreaterThan(0);
    expect(code, run.output()).toBe(1);
    expect(performance.now() - killedAt, 'fatal at once, not after max_failed_steps').toBeLessThan(
      20_000,
    );
    expect(run.output()).toContain(
      'rl2: rollout step 2: the inference engine cannot be reached after its retries, stopping: /generate failed after 4 attempt(s)',
    );
    expect(run.output()).toContain('or fix the URL (rollout.server_urls of rl2 ppo).');
    expect(readlinkSync(join(saveDir, 'latest'))).toBe('step-1');
  }, 180_000);
});

describe('rl2 ppo with an env stuck in a synchronous loop (it used to hang for ever, deaf to Ctrl-C)', () => {
  it('rollout.env_timeout_s ends the blocked step() and Ctrl-C saves a checkpoint and exits with 130', async () => {
    const saveDir = join(tmp('ppo-spin'), 'run');
    let sent = false;
    const run = spawnCli(
      ppo(saveDir, env('spin-env.mjs', 'export async function step() { for (;;) {} }\n'), [
        'rollout.env_timeout_s=1',
        'rollout.max_failed_steps=100',
      ]),
      (out, child) => {
        if (!sent && /such steps in a row tolerated/.test(out)) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    );
    const code = await run.exited;
    expect(sent, run.output()).toBe(true);
    expect(code, run.output()).toBe(130);
    expect(run.output()).toContain(
      'rollout step 1: all 4 samples failed (0 env errors, 4 env timeouts, 0 engine errors',
    );
    expect(run.output()).toMatch(
      /interrupted at step \d+\/40; resume with trainer.load_ckpt_from=latest/,
    );
    expect(
      existsSync(join(saveDir, readlinkSync(join(saveDir, 'latest')), 'trainer_state.json')),
    ).toBe(true);
  }, 120_000);
});
