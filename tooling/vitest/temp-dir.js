// Temp folders for tests, removed when the test file ends: `tempDir('rl2-ckpt-')` makes
// `<tmp>/rl2-ckpt-XXXXXX`; the setup file that packageConfig installs (temp-dir-setup.js)
// removes every folder made here after the file's last test. temp-guard.js fails the run on
// any `rl2-*` entry still in the temp directory at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = [];

/** A fresh folder `<os tmpdir>/<prefix>XXXXXX`, removed after the test file's last test. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes the folders tempDir made so far (the setup file calls it in afterAll). */
export function removeTempDirs() {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
