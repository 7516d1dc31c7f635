import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TrainersError } from '../errors.js';
import { LOCK_FILE, lockSaveDir, releaseSaveDir } from './save-dir-lock.js';

const GONE = 999_999_999; // above any pid_max: no such process
const dirs: string[] = [];
const runDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl2-lock-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) {
    releaseSaveDir(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

const plant = (dir: string, pid: number, host = hostname()) =>
  writeFileSync(
    join(dir, LOCK_FILE),
    JSON.stringify({ pid, host, started: '2026-01-01T00:00:00.000Z', token: 'theirs' }),
  );
const holder = (dir: string) => JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'));
const failure = (fn: () => void) => {
  try {
    fn();
  } catch (err) {
    return err as TrainersError;
  }
  throw new Error('expected a failure');
};

describe('lockSaveDir', () => {
  it('writes this pid and host, and releases the folder', () => {
    const dir = join(runDir(), 'not-yet-made');
    lockSaveDir(dir, () => {});
    expect(holder(dir)).toMatchObject({ pid: process.pid, host: hostname() });
    expect(readdirSync(dir)).toEqual([LOCK_FILE]); // no temp file left
    releaseSaveDir(dir);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('fails naming the folder and the pid of a live run holding it', () => {
    const dir = runDir();
    plant(dir, process.ppid); // the parent: alive, and not this process
    const err = failure(() => lockSaveDir(dir, () => {}));
    expect(err.code).toBe('SAVE_DIR_LOCKED');
    expect(err.message).toContain(
      `trainer.save_dir=${dir} is in use by another run: pid ${process.ppid} on this host`,
    );
    expect(err.message).toContain('give this run another trainer.save_dir');
    expect(holder(dir).token).toBe('theirs'); // left as it was
  });

  it('takes over the lock of a process that is gone, and says so', () => {
    const dir = runDir();
    plant(dir, GONE);
    const said: string[] = [];
    lockSaveDir(dir, (line) => said.push(line));
    expect(holder(dir).pid).toBe(process.pid);
    expect(said).toEqual([
      `took over the lock ${join(dir, LOCK_FILE)} of pid ${GONE} (started 2026-01-01T00:00:00.000Z), which is no longer running`,
    ]);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('cannot tell a lock of another host from a live one: fails and says to delete it if that run is gone', () => {
    const dir = runDir();
    plant(dir, GONE, 'node-7');
    const err = failure(() => lockSaveDir(dir, () => {}));
    expect(err.message).toContain(`pid ${GONE} on host node-7`);
    expect(err.message).toContain(`if that run is gone, delete ${join(dir, LOCK_FILE)}`);
  });

  it('an unreadable lock file fails naming it', () => {
    const dir = runDir();
    writeFileSync(join(dir, LOCK_FILE), '');
    expect(failure(() => lockSaveDir(dir, () => {})).message).toContain(
      `has a lock file ${join(dir, LOCK_FILE)} that cannot be read; if no run writes in ${dir}, delete it`,
    );
  });

  it.skipIf(process.getuid?.() === 0)(
    'a folder this user cannot write fails naming the lock file',
    () => {
      const dir = runDir();
      chmodSync(dir, 0o500);
      try {
        expect(failure(() => lockSaveDir(join(dir, 'run'), () => {})).message).toContain(
          `cannot write the lock file ${join(dir, 'run', LOCK_FILE)}: EACCES`,
        );
      } finally {
        chmodSync(dir, 0o700);
      }
    },
  );

  it('release leaves a lock that is not this run’s alone', () => {
    const dir = runDir();
    plant(dir, process.ppid);
    releaseSaveDir(dir);
    expect(holder(dir).token).toBe('theirs');
  });
});
