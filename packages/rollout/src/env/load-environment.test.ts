import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { loadEnvironment } from './load-environment.js';

const envs = join(import.meta.dirname, '..', '..', 'test', 'envs');

describe('loadEnvironment', () => {
  it('loads a TypeScript env (types, enum, relative .ts import) with its reset', async () => {
    const env = await loadEnvironment(join(envs, 'typed-env.ts'));
    expect(await env.reset({ prompt: 'Q', answer: 7 })).toEqual({
      state: 'Q>',
      answer: { target: '7' },
    });
    expect(await env.step('Q>', ' 7 ', { target: '7' })).toEqual({
      nextState: null,
      reward: 10,
      done: true,
    });
    expect(await env.step('Q>', '8', { target: '7' })).toEqual({
      nextState: null,
      reward: 0,
      done: true,
    });
  });

  it('loads .mjs (object form) and .js (default export, tuple form)', async () => {
    const mjs = await loadEnvironment(join(envs, 'plain-env.mjs'));
    expect(await mjs.step('s', 'x', 'x')).toEqual({ nextState: null, reward: 1, done: true });
    expect(await mjs.reset({ prompt: 'p', answer: 'a' })).toEqual({ state: 'p', answer: 'a' });
    const js = await loadEnvironment(join(envs, 'default-env.js'));
    expect(await js.step('s', 'ab', null)).toEqual({ nextState: 'sab|', reward: 2, done: false });
  });

  it('names the path when the file is missing, has the wrong extension, fails to load or lacks step', async () => {
    await expect(loadEnvironment('/nope/env.ts')).rejects.toThrow(
      /rollout.env_path "\/nope\/env.ts" does not exist/,
    );
    await expect(loadEnvironment(join(envs, '..', 'scripted-engine.txt'))).rejects.toThrow(
      /must end in .ts/,
    );
    const dir = tempDir('rl2-env-');
    const broken = join(dir, 'broken.ts');
    writeFileSync(broken, 'export const step = (: number) => ;\n');
    await expect(loadEnvironment(broken)).rejects.toMatchObject({
      code: 'ENV_LOAD',
      message: expect.stringContaining(`cannot load rollout.env_path "${broken}"`),
    });
    const noStep = join(dir, 'no-step.mjs');
    writeFileSync(noStep, 'export const stop = 1;\n');
    await expect(loadEnvironment(noStep)).rejects.toThrow(/does not export a step function/);
  });
});
