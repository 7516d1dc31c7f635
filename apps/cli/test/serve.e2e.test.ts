import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shapeMismatches } from '../../../packages/rollout/test/sglang-fixtures.js';
import { initTinyModel, tmp } from './helpers.js';

// The real `rl2 serve` process, from source (as interrupt.e2e does): Ctrl-C and SIGTERM stop it
// cleanly without talk of checkpoints; --api-key and RL2_API_KEY guard it; it answers /generate
// in the shape of SGLang's fixture.
const hooks = resolve(
  import.meta.dirname,
  '../../../packages/trainers/test/ranks/register-source.mjs',
);
const cli = [
  process.execPath,
  '--import',
  'tsx',
  '--import',
  hooks,
  resolve(import.meta.dirname, '../src/cli.ts'),
];
const fixture = (name: string) =>
  JSON.parse(
    readFileSync(
      resolve(import.meta.dirname, `../../../packages/rollout/fixtures/sglang/${name}.json`),
      'utf8',
    ),
  );

/** Starts `rl2 serve`; resolves with its URL once it prints `ready:`. */
function startServe(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(cli[0]!, [...cli.slice(1), 'serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr += String(b);
  });
  const ready = new Promise<string>((done, fail) => {
    child.stdout.on('data', (b: Buffer) => {
      stdout += String(b);
      const m = /ready: (http:\/\/\S+)/.exec(stdout);
      if (m) done(m[1]!);
    });
    child.on('close', (code) => fail(new Error(`rl2 serve exited with ${code}: ${stderr}`)));
  });
  const exited = new Promise<number | null>((done) => child.on('close', done));
  return { child, ready, exited, output: () => ({ stdout, stderr }) };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals, exited: Promise<number | null>) {
  child.kill(signal);
  return exited;
}

let made: string | undefined;
async function modelDir() {
  if (made) return made;
  const model = join(tmp('serve'), 'model');
  await initTinyModel(model);
  made = model;
  return model;
}

const generate = (url: string, key?: string) =>
  fetch(`${url}/generate`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(fixture('generate-input-ids').request.body),
  });

describe('rl2 serve as a process', () => {
  it('--api-key guards every endpoint but /health; Ctrl-C stops it with exit 0 and no checkpoint talk', async () => {
    const s = startServe([
      '--model',
      await modelDir(),
      '--port',
      '0',
      '--threads',
      '1',
      '--api-key',
      'sk-flag',
    ]);
    const url = await s.ready;
    expect((await fetch(`${url}/health`)).status).toBe(200);
    const refused = await generate(url);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual(fixture('unauthorized').response.body);
    const answer = await generate(url, 'sk-flag');
    expect(answer.status).toBe(200);
    const f = fixture('generate-input-ids');
    expect(shapeMismatches(f.response.body, await answer.json(), f.loose)).toEqual([]);
    const code = await stop(s.child, 'SIGINT', s.exited);
    const { stdout, stderr } = s.output();
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('stopped');
    expect(stderr).toContain('rl2: interrupted; stopping');
    expect(stderr).not.toMatch(/checkpoint/);
  }, 90_000);

  it('takes the key from RL2_API_KEY; SIGTERM stops it cleanly', async () => {
    const s = startServe(['--model', await modelDir(), '--port', '0', '--threads', '1'], {
      RL2_API_KEY: 'sk-env',
    });
    const url = await s.ready;
    expect((await generate(url)).status).toBe(401);
    expect((await generate(url, 'sk-env')).status).toBe(200);
    const code = await stop(s.child, 'SIGTERM', s.exited);
    const { stdout, stderr } = s.output();
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('stopped');
    expect(stderr).not.toMatch(/checkpoint/);
  }, 90_000);
});
