// vitest globalSetup: the run gets a temp directory of its own (TMPDIR, TMP and TEMP point into
// it, for the test workers and every process they start); at the end any `rl2-*` entry still in
// it fails the run, named, and the directory is removed, so a leaking test cannot fill the
// system temp directory. The names also go to .vitest/temp-leaks.txt, which
// tooling/scripts/test-summary.mjs counts as a failure.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const VARS = ['TMPDIR', 'TMP', 'TEMP'];

export default function setup(project) {
  const leaksFile = join(project.config.root, '.vitest', 'temp-leaks.txt');
  rmSync(leaksFile, { force: true });
  const dir = mkdtempSync(join(tmpdir(), 'vitest-run-'));
  const saved = VARS.map((name) => [name, process.env[name]]);
  for (const name of VARS) process.env[name] = dir;
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    const left = readdirSync(dir)
      .filter((name) => name.startsWith('rl2-'))
      .sort();
    rmSync(dir, { recursive: true, force: true });
    if (left.length === 0) return;
    mkdirSync(join(project.config.root, '.vitest'), { recursive: true });
    writeFileSync(leaksFile, `${left.join('\n')}\n`);
    process.exitCode = 1; // an error thrown here is printed, but leaves the exit code at 0
    throw new Error(
      `tests left ${left.length} rl2-* entries in the temp directory: ${left.join(', ')}. ` +
        `Make them with tempDir() from '@rl2/vitest-config/temp-dir' (removed after the file) ` +
        `or remove them in afterAll.`,
    );
  };
}
