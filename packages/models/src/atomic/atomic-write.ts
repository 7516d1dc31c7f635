import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tempPathBeside } from './atomic-dir.js';

/** Writes a file through a `.tmp-*` file beside it + rename, so readers never see half a file. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = tempPathBeside(path);
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/** Points `<dir>/<name>` at `target` (a sibling entry) through a temporary link + rename. */
export function updateLink(dir: string, name: string, target: string): void {
  const tmp = tempPathBeside(join(dir, name));
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp);
  renameSync(tmp, join(dir, name));
}
