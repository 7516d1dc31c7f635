import { DataError } from '../errors.js';
import type { OpenDatasetOptions } from './open-dataset.js';
import { openDataset } from './open-dataset.js';
import type { LoadStats, Row, RowOrigin } from './row.js';

/** A whole split in memory: rows, where each came from (same index), and the load stats. */
export interface LoadedDataset {
  split: string;
  /** The files read, in order (for hub datasets: paths in the HF cache). */
  files: string[];
  rows: Row[];
  origins: RowOrigin[];
  stats: LoadStats;
}

/**
 * Reads every row of `spec` (see {@link openDataset}). Trainers need random access for
 * shuffling and the test split, so this collects; use `openDataset` to stream instead.
 * An empty result is EMPTY_DATASET.
 */
export async function loadDataset(
  spec: string,
  options: OpenDatasetOptions = {},
): Promise<LoadedDataset> {
  const stream = await openDataset(spec, options);
  const rows: Row[] = [];
  const origins: RowOrigin[] = [];
  for await (const batch of stream.batches()) {
    for (const { row, origin } of batch) {
      rows.push(row);
      origins.push(origin);
    }
  }
  if (rows.length === 0) {
    const skipped =
      stream.stats.rowsSkipped > 0
        ? ` (${stream.stats.rowsSkipped} rows were skipped as malformed, first: ${stream.stats.skipped[0]?.reason})`
        : '';
    throw new DataError(
      'EMPTY_DATASET',
      `Dataset "${spec}" (split ${stream.split}) has no rows${skipped}. Files read: ${stream.files.join(', ')}.`,
    );
  }
  return { split: stream.split, files: stream.files, rows, origins, stats: stream.stats };
}
