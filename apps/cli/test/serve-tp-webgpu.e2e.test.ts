// `rl2 serve --tp 2` on the webgpu backend stops at start with the reason and what to do (no
// OffscreenCanvas crash in the first forward, no rank left waiting on the other).
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { webgpuForTests } from '@rl2/engine/testing';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_TOKENIZER, rl2, tmp } from './helpers.js';

const gpu = webgpuForTests();
const hooks = resolve(
  import.meta.dirname,
  '../../../packages/trainers/test/ranks/register-source.mjs',
);
const cli = ['--import', 'tsx', '--import', hooks, resolve(import.meta.dirname, '../src/cli.ts')];

describe.skipIf(!gpu.ok)('rl2 serve --tp on webgpu', () => {
  it('exits 1 naming --tp and the alternatives', async () => {
    const dir = tmp('serve-tp-webgpu');
    const model = join(dir, 'model');
    try {
      await expectRefused(model);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});

async function expectRefused(model: string) {
  const made = await rl2(['init-model', '--tokenizer', EXAMPLE_TOKENIZER, '--out', model]);
  expect(made.code, made.stderr).toBe(0);
  const r = spawnSync(
    process.execPath,
    [...cli, 'serve', '--model', model, '--port', '0', '--threads', '1', '--tp', '2'],
    { encoding: 'utf8', env: { ...process.env, RL2_BACKEND: 'webgpu' }, timeout: 120_000 },
  );
  expect(r.status).toBe(1);
  expect(r.stderr).toMatch(/--tp 2 on a GPU backend \(webgpu\)/);
  expect(r.stderr).toMatch(/--tp 1 .*RL2_BACKEND=native/);
  expect(r.stderr).not.toMatch(/OffscreenCanvas/);
}
