import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** `.tmp-<pid>-<time>-<name>` / `.old-<pid>-<time>-<name>`: what a save works in, beside its target. */
const WORK_DIR = /^\.(tmp|old)-(\d+)-\d+-(.+)$/;

const workName = (kind: 'tmp' | 'old', name: string) =>
  `.${kind}-${process.pid}-${Date.now()}-${name}`;

/**
 * A path beside `path` for a file or link to write before renaming it over `path`; named like a
 * save's work folder, so that {@link removeStaleSaves} knows it for ours when a kill leaves it.
 */
export function tempPathBeside(path: string): string {
  return join(dirname(path), workName('tmp', basename(path)));
}

/**
 * A fresh folder beside `dir` to fill before `commitDir` puts it in place (same file system,
 * so the final rename is atomic). Work folders of `dir` left by killed processes are removed.
 */
export function tempDirBeside(dir: string): string {
  const parent = dirname(dir);
  mkdirSync(parent, { recursive: true });
  removeStaleWorkDirs(parent, basename(dir));
  const tmp = join(parent, workName('tmp', basename(dir)));
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  return tmp;
}

/**
 * Replaces `dir` by the filled `tmp`: every file and folder in `tmp` is flushed to disk, then
 * `dir` (if any) is renamed aside, `tmp` renamed to `dir`, the parent flushed and the old folder
 * removed. A crash before the renames leaves `dir` as it was; the only window without `dir` is
 * between two renames, and then the previous folder is whole under `.old-*`.
 */
export function commitDir(tmp: string, dir: string): void {
  syncTree(tmp);
  const parent = dirname(dir);
  if (existsSync(dir)) {
    const old = join(parent, workName('old', basename(dir)));
    renameSync(dir, old);
    renameSync(tmp, dir);
    syncPath(parent);
    rmSync(old, { recursive: true, force: true });
  } else {
    renameSync(tmp, dir);
    syncPath(parent);
  }
}

/**
 * Fills a fresh folder beside `dir` with `fill`, then puts it in place of `dir` (see
 * `commitDir`). On an error the work folder is removed and `dir` is untouched.
 */
export async function writeDirAtomic(
  dir: string,
  fill: (tmpDir: string) => Promise<void> | void,
): Promise<void> {
  const tmp = tempDirBeside(dir);
  try {
    await fill(tmp);
    commitDir(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Flushes a file or folder to the disk (what makes a later rename durable). */
function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncTree(path: string): void {
  if (statSync(path).isDirectory())
    for (const name of readdirSync(path)) syncTree(join(path, name));
  syncPath(path);
}

/**
 * Work folders and files in `parent` (of `name` only, when given) left by processes that are gone.
 * A `.old-*` one while its target is missing is the previous folder of a save killed between its
 * two renames.
 */
function staleWorkDirs(
  parent: string,
  name?: string,
): { path: string; target: string; old: boolean }[] {
  if (!existsSync(parent)) return [];
  return readdirSync(parent)
    .map((entry) => ({ entry, m: WORK_DIR.exec(entry) }))
    .filter(({ m }) => m && (name === undefined || m[3] === name) && !processAlive(Number(m[2])))
    .map(({ entry, m }) => ({
      path: join(parent, entry),
      target: m?.[3] as string,
      old: m?.[1] === 'old',
    }));
}

function removeStaleWorkDirs(parent: string, name: string): void {
  recoverInterruptedSave(join(parent, name));
  for (const stale of staleWorkDirs(parent, name))
    rmSync(stale.path, { recursive: true, force: true });
}

/**
 * Cleans `parent` (a run folder) of what saves killed mid-way left in it: a save killed between
 * its two renames gets its previous folder back, and every other `.tmp-*` / `.old-*` work folder
 * or file of a process that is gone is removed (those of live processes, such as another run
 * saving into the same folder, are kept). Returns the names removed.
 */
export function removeStaleSaves(parent: string): string[] {
  for (const target of new Set(staleWorkDirs(parent).map((s) => s.target)))
    recoverInterruptedSave(join(parent, target));
  const stale = staleWorkDirs(parent);
  for (const s of stale) rmSync(s.path, { recursive: true, force: true });
  return stale.map((s) => basename(s.path));
}

/**
 * Puts back the previous `dir` of a save killed between its two renames (then `dir` is missing
 * and its whole previous content waits in `.old-*`). Returns whether it did.
 */
export function recoverInterruptedSave(dir: string): boolean {
  if (existsSync(dir)) return false;
  const old = staleWorkDirs(dirname(dir), basename(dir)).find((s) => s.old);
  if (!old) return false;
  renameSync(old.path, dir);
  return true;
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return false; // an earlier save of this process that failed
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
