import { existsSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Writes a file through `<path>.tmp-<pid>` + rename, so readers never see half a file. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * Fills a fresh temporary directory next to `dir` with `fill`, then renames it to `dir`
 * (replacing an older `dir`). A crash mid-way leaves only a `.tmp-*` directory behind,
 * which `resolveCheckpoint` ignores.
 */
export async function writeDirAtomic(dir: string, fill: (tmpDir: string) => Promise<void> | void): Promise<void> {
  const tmp = join(dirname(dir), `.tmp-${process.pid}-${Date.now()}-${dir.split(/[\\/]/).pop()}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    await fill(tmp);
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Points `<dir>/<name>` at `target` (a sibling entry) through a temporary link + rename. */
export function updateLink(dir: string, name: string, target: string): void {
  const tmp = join(dir, `.${name}.tmp-${process.pid}`);
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp);
  renameSync(tmp, join(dir, name));
}
