import { type BadRowPolicy, type Row, type RowOrigin, loadDataset } from '@rl2/data';
import { TrainersError } from '../errors.js';

/** The rows of one data split, where each came from, and how many malformed rows were skipped. */
export interface LoadedRows {
  rows: Row[];
  origins: RowOrigin[];
  skipped: number;
}

/**
 * Reads `path` (the value of config key `key`, e.g. `data.train.path`). A malformed row fails
 * naming its file and line and `data.on_bad_row=skip`, or is counted and skipped with that set.
 */
export async function loadRows(
  path: string,
  key: string,
  onBadRow: BadRowPolicy = 'error',
): Promise<LoadedRows> {
  try {
    const ds = await loadDataset(path, {
      onBadRow,
      badRowHint: 'Or set data.on_bad_row=skip to count and skip such rows.',
    });
    return { rows: ds.rows, origins: ds.origins, skipped: ds.stats.rowsSkipped };
  } catch (err) {
    throw new TrainersError('BAD_DATA', `${key}=${path}: ${(err as Error).message}`);
  }
}

/** The rows at `idx` of `from` (a split of one loaded file); skipped rows stay with the first part. */
export function pickRows(from: LoadedRows, idx: readonly number[], skipped = 0): LoadedRows {
  return {
    rows: idx.map((i) => from.rows[i] as Row),
    origins: idx.map((i) => from.origins[i] as RowOrigin),
    skipped,
  };
}
