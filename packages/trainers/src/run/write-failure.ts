import { TrainersError } from '../errors.js';

const FULL = new Set(['ENOSPC', 'EDQUOT']);
const READ_ONLY = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * A failed write of `what` at `path` as an error naming the path and what to do: Node's own
 * (`ENOSPC: no space left on device, write`) names neither when it writes through a file
 * descriptor. Errors that are not the file system's (no errno code) pass through as they are.
 */
export function writeFailure(err: unknown, what: string, path: string): unknown {
  const e = err as NodeJS.ErrnoException;
  if (!(e instanceof Error) || typeof e.code !== 'string' || typeof e.syscall !== 'string')
    return err;
  const fix = FULL.has(e.code)
    ? '; the disk is full (or over quota): free space there, or set trainer.save_dir to a folder on another disk'
    : READ_ONLY.has(e.code)
      ? '; set trainer.save_dir to a folder this user can write'
      : '';
  return new TrainersError('WRITE_FAILED', `cannot write ${what} ${path}: ${e.message}${fix}`);
}
