import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { afterEach, describe, expect, it } from 'vitest';
import type { Environment } from './environment.js';
import { loadEnvironment } from './load-environment.js';

const dir = tempDir('rl2-env-workers-');
/**
 * One env whose behaviour the action picks: `spin` blocks its thread for ever, `slow` awaits
 * 1.5 s, `count` returns how many calls this module instance has seen, `crash` throws from a
 * timer 0.3 s after answering (while the next call runs), `fn` returns a function (cannot be copied between threads).
 */
const envFile = join(dir, 'faulty-env.mjs');
writeFileSync(
  envFile,
  `let calls = 0;
export async function step(state, action, answer) {
  calls += 1;
  if (action === 'spin') for (;;) {}
  if (action === 'slow') await new Promise((r) => setTimeout(r, 1500));
  if (action === 'crash') setTimeout(() => { throw new Error('late failure'); }, 300);
  if (action === 'fn') return [null, () => 1, true];
  return [null, action === 'count' ? calls : 1, true];
}
export function reset(prompt) {
  return { state: prompt.prompt, answer: { answer: prompt.answer, level: prompt.row.level } };
}
`,
);

let env: Environment | undefined;
afterEach(async () => {
  await env?.close?.();
  env = undefined;
});

describe('envs in worker threads', () => {
  it('a step blocked in a synchronous loop times out, its worker is replaced, and the main thread never stops', async () => {
    env = await loadEnvironment(envFile, { timeoutMs: 300 });
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 20);
    const began = performance.now();
    const blocked = env.step('s', 'spin', null);
    await expect(blocked).rejects.toMatchObject({
      code: 'ENV_TIMEOUT',
      message: expect.stringContaining(
        'step() did not finish within 0.3 s (rollout.env_timeout_s=0.3)',
      ),
    });
    // sent to the blocked worker before it is found out (half the limit later): fails with it
    const alongside = env.step('s', 'slow', null);
    await expect(alongside).rejects.toMatchObject({
      code: 'ENV_TIMEOUT',
      message: expect.stringContaining(
        'the env worker was restarted: a step() on it blocked its thread',
      ),
    });
    const waited = performance.now() - began;
    clearInterval(timer);
    expect(waited).toBeLessThan(3000);
    expect(ticks, 'timers on the main thread kept running').toBeGreaterThan(5);
    // a fresh worker (module state reset) answers the next call
    expect(await env.step('s', 'count', null)).toEqual({ nextState: null, reward: 1, done: true });
  });

  it('a slow async step times out without restarting its worker (module state kept)', async () => {
    env = await loadEnvironment(envFile, { timeoutMs: 1000 });
    await expect(env.step('s', 'slow', null)).rejects.toMatchObject({ code: 'ENV_TIMEOUT' });
    await new Promise((r) => setTimeout(r, 800)); // past the liveness check (half the limit)
    expect((await env.step('s', 'count', null)).reward).toBe(2);
  });

  it('reset sees the whole row; a crash outside step() and an uncopyable result are errors; close() ends the calls', async () => {
    env = await loadEnvironment(envFile, { timeoutMs: 5000 });
    expect(
      await env.reset({ prompt: 'p', answer: 7, row: { prompt: 'p', answer: 7, level: 'hard' } }),
    ).toEqual({ state: 'p', answer: { answer: 7, level: 'hard' } });
    await expect(env.step('s', 'fn', null)).rejects.toMatchObject({
      code: 'ENV_STEP',
      message: expect.stringContaining('cannot be sent between threads'),
    });
    expect((await env.step('s', 'crash', null)).reward).toBe(1);
    const next = env.step('s', 'slow', null);
    await expect(next).rejects.toMatchObject({
      code: 'ENV_STEP',
      message: expect.stringContaining('the env worker crashed: late failure'),
    });
    expect((await env.step('s', 'count', null)).reward).toBe(1); // replaced
    const open = expect(env.step('s', 'slow', null)).rejects.toMatchObject({
      message: expect.stringContaining('the environment was closed'),
    });
    await env.close?.();
    await open;
  });

  it('spreads calls over rollout.env_workers threads, each with its own module state', async () => {
    env = await loadEnvironment(envFile, { timeoutMs: 5000, workers: 2 });
    const counts = await Promise.all(
      Array.from({ length: 4 }, () => env!.step('s', 'count', null)),
    );
    expect(counts.map((c) => c.reward).sort()).toEqual([1, 1, 2, 2]);
    await expect(loadEnvironment(envFile, { workers: 0 })).rejects.toThrow(
      /rollout.env_workers must be an integer >= 1, got 0/,
    );
  });
});
