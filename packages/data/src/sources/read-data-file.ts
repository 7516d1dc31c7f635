import { DataError } from '../errors.js';
import { readArrow } from './read-arrow.js';
import { readCsv } from './read-csv.js';
import { readJson } from './read-json.js';
import { readJsonl } from './read-jsonl.js';
import { readParquet } from './read-parquet.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

/** File extensions a reader exists for. */
export const DATA_FILE_EXTENSIONS = [
  '.jsonl',
  '.ndjson',
  '.json',
  '.csv',
  '.parquet',
  '.arrow',
] as const;

/** The reader kind for a path, from its extension; undefined when none fits. */
export function dataFileKind(
  file: string,
): 'jsonl' | 'json' | 'csv' | 'parquet' | 'arrow' | undefined {
  const lower = file.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.parquet')) return 'parquet';
  if (lower.endsWith('.arrow')) return 'arrow';
  return undefined;
}

/**
 * Streams the rows of one data file in batches (arrays of up to a few thousand rows: one
 * async step per batch, not per row), picking the reader from the extension.
 */
export function readDataFileBatches(
  file: string,
  stats: LoadStats,
  onBadRow: BadRowPolicy = 'error',
): AsyncGenerator<RowWithOrigin[]> {
  switch (dataFileKind(file)) {
    case 'jsonl':
      return readJsonl(file, stats, onBadRow);
    case 'json':
      return readJson(file, stats, onBadRow);
    case 'csv':
      return readCsv(file, stats, onBadRow);
    case 'parquet':
      return readParquet(file);
    case 'arrow':
      return readArrow(file);
    default:
      throw new DataError(
        'UNSUPPORTED_FORMAT',
        `Cannot read ${file}: unsupported extension. Use one ` +
          `of ${DATA_FILE_EXTENSIONS.join(', ')}, a folder of such files, or a Hugging Face dataset name.`,
      );
  }
}

/** Streams the rows of one data file one by one (see {@link readDataFileBatches}). */
export async function* readDataFile(
  file: string,
  stats: LoadStats,
  onBadRow: BadRowPolicy = 'error',
): AsyncGenerator<RowWithOrigin> {
  for await (const batch of readDataFileBatches(file, stats, onBadRow)) yield* batch;
}
