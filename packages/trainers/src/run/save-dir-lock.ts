import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { tempPathBeside } from '@rl2/models';
import { TrainersError } from '../errors.js';
import { writeFailure } from './write-failure.js';

/** The lock file a run keeps in its `trainer.save_dir` while it writes there. */
export const LOCK_FILE = 'rl2.lock';

/** What the lock file holds: who writes in the folder, since when. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly started: string;
  /** Tells this lock from a later one of the same pid (pids are reused). */
  readonly token: string;
}

/** Locks this process holds, by file: released when the run ends or the process exits. */
const held = new Map<string, string>();
let releaseOnExit = false;

function readHolder(file: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
    return Number.isInteger(holder.pid) && typeof holder.host === 'string' ? holder : undefined;
  } catch {
    return undefined;
  }
}

/** Creates `file` holding `text` only if it does not exist, never half-written (a hard link of a finished file). */
function createOnly(file: string, text: string): boolean {
  const tmp = tempPathBeside(file); // named as saves name theirs: a kill's leftover is cleaned with them
  writeFileSync(tmp, text);
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // a filesystem without hard links: exclusive create (a crash mid-write leaves a file to delete)
    try {
      writeFileSync(file, text, { flag: 'wx' });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  } finally {
    unlinkSync(tmp);
  }
}

/** Whether `pid` runs on this host (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Moves the lock of a process that is gone out of the way; false when another run replaced it
 * meanwhile (that lock is put back).
 */
function takeOver(file: string, stale: LockHolder): boolean {
  const aside = tempPathBeside(file);
  try {
    renameSync(file, aside);
  } catch {
    return true; // gone already: try to create ours
  }
  const moved = readHolder(aside);
  if (moved?.token === stale.token) {
    unlinkSync(aside);
    return true;
  }
  try {
    linkSync(aside, file);
  } catch {}
  unlinkSync(aside);
  return false;
}

function inUse(dir: string, file: string, holder: LockHolder | undefined): TrainersError {
  if (!holder)
    return new TrainersError(
      'SAVE_DIR_LOCKED',
      `trainer.save_dir=${dir} has a lock file ${file} that cannot be read; if no run writes in ${dir}, delete it`,
    );
  const here = holder.host === hostname();
  return new TrainersError(
    'SAVE_DIR_LOCKED',
    `trainer.save_dir=${dir} is in use by another run: pid ${holder.pid} on ${here ? 'this host' : `host ${holder.host}`}, ` +
      `started ${holder.started} (lock file ${file}). Wait for it to end or stop it, or give this run another trainer.save_dir` +
      (here ? '' : `; if that run is gone, delete ${file}`),
  );
}

/**
 * Takes the lock of the run folder `dir` for this process: `dir/rl2.lock`, created atomically
 * with this pid and host, so two runs never write the same folder (their metrics rows, step-N
 * folders and config.yaml would mix). A lock of a live process fails with the folder and its
 * pid; one left by a process of this host that is gone (SIGKILL, a crash) is taken over, and
 * `say` gets a line about it. The lock goes when the run ends ({@link releaseSaveDir}) or the
 * process exits (also after Ctrl-C or SIGTERM). A lock this process already holds (a run of it
 * that failed while it set up) is taken back.
 */
export function lockSaveDir(dir: string, say: (line: string) => void): void {
  const file = join(resolve(dir), LOCK_FILE);
  try {
    takeLock(dir, file, say);
  } catch (err) {
    throw writeFailure(err, 'the lock file', file); // a full disk, a folder of another user
  }
  if (!releaseOnExit) {
    releaseOnExit = true;
    process.on('exit', () => {
      for (const f of held.keys()) {
        try {
          release(f);
        } catch {} // exiting anyway: a lock left behind is taken over by the next run
      }
    });
  }
}

function takeLock(dir: string, file: string, say: (line: string) => void): void {
  mkdirSync(dir, { recursive: true });
  const mine: LockHolder = {
    pid: process.pid,
    host: hostname(),
    started: new Date().toISOString(),
    token: randomBytes(8).toString('hex'),
  };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; !createOnly(file, text); attempt++) {
    const holder = readHolder(file);
    const ours = holder?.pid === process.pid && holder.host === mine.host;
    const gone = holder && holder.host === mine.host && !ours && !running(holder.pid);
    if (!holder || attempt > 0 || !(ours || gone)) throw inUse(dir, file, holder);
    if (!takeOver(file, holder)) throw inUse(dir, file, readHolder(file));
    if (gone)
      say(
        `took over the lock ${file} of pid ${holder.pid} (started ${holder.started}), which is no longer running`,
      );
  }
  held.set(file, mine.token);
}

function release(file: string): void {
  const token = held.get(file);
  held.delete(file);
  if (token !== undefined && readHolder(file)?.token === token) unlinkSync(file);
}

/** Releases this process's lock of the run folder `dir`, if it holds one. */
export function releaseSaveDir(dir: string): void {
  release(join(resolve(dir), LOCK_FILE));
}
