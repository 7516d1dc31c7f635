import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// What an npm user gets (tooling/scripts/packed-install.mjs): every package packed, the
// tarballs installed with npm into a fresh project, `npx rl2 sft` on the tiny example. It must
// train on the native engine from the prebuilt @rl2/engine-linux-x64-gnu. Needs `pnpm build`
// first (CI's setup.sh does it) and npm's cache or registry for the third-party packages.
// Runs where the prebuilt binary is expected: RL2_REQUIRE_NATIVE=1 (CI), or a repository where
// the build made one; a missing binary then fails the test rather than skipping it.
const root = resolve(import.meta.dirname, '../../..');
const prebuilt = resolve(root, 'packages/engine/npm/linux-x64-gnu/rl2_kernels.node');
const expected = process.env.RL2_REQUIRE_NATIVE === '1' || existsSync(prebuilt);

describe.skipIf(!expected)('packed npm install', () => {
  it('trains the tiny example on the native engine from the prebuilt binary package', () => {
    const r = spawnSync(
      process.execPath,
      [resolve(root, 'tooling/scripts/packed-install.mjs'), '--steps', '2'],
      { encoding: 'utf8', timeout: 240_000 },
    );
    const out = `${r.stdout}${r.stderr}`;
    expect(r.status, out).toBe(0);
    expect(out).toMatch(
      /packed-install: rl2 engine: backend native, \d+ threads? \(OpenBLAS sgemm \+ C kernels from @rl2\/engine-linux-x64-gnu\)/,
    );
    expect(out).toMatch(/packed-install: ok, \d+ tok\/s/);
  }, 300_000);
});
