import { DataError } from '../errors.js';

/** Turns a Node fs error on `file` into a DataError that names the file and says what to check. */
export function fileError(file: string, err: unknown): DataError {
  if (err instanceof DataError) return err;
  const code = (err as { code?: string } | null)?.code;
  if (code === 'ENOENT') {
    return new DataError(
      'FILE_NOT_FOUND',
      `Data file not found: ${file}. Check the path (relative paths resolve from ${process.cwd()}).`,
      { cause: err },
    );
  }
  const why =
    code === 'EACCES'
      ? 'permission denied'
      : code === 'EISDIR'
        ? 'it is a directory'
        : String((err as Error)?.message ?? err);
  return new DataError('UNREADABLE_FILE', `Cannot read data file ${file}: ${why}.`, { cause: err });
}
