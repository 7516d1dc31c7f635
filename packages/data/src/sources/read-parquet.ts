import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { FileMetaData } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { columnarUtf8Error, strictStringFromBytes } from './columnar-utf8.js';
import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { plainValue } from './plain-value.js';
import type { RowWithOrigin } from './row-with-origin.js';

const BATCH_ROWS = 4096;

/**
 * Streams a Parquet file in batches of rows, decoding one row group at a time (hyparquet; snappy built in, zstd, gzip,
 * brotli and lz4 through hyparquet-compressors). Only one row group's rows are in memory.
 */
export async function* readParquet(file: string): AsyncGenerator<RowWithOrigin[]> {
  let metadata: FileMetaData;
  let buffer: Awaited<ReturnType<typeof asyncBufferFromFile>>;
  try {
    buffer = await asyncBufferFromFile(file);
    metadata = await parquetMetadataAsync(buffer);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code) throw fileError(file, e);
    throw new DataError(
      'UNREADABLE_FILE',
      `${file} is not a readable Parquet file (${(e as Error).message}). Check that it was fully downloaded.`,
      { cause: e },
    );
  }
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({
        file: buffer,
        metadata,
        rowStart,
        rowEnd,
        compressors,
        rowFormat: 'object',
        utf8: false,
        parsers: { stringFromBytes: strictStringFromBytes },
      });
    } catch (e) {
      throw new DataError(
        'UNREADABLE_FILE',
        `${file}: cannot decode rows ${rowStart}-${rowEnd - 1} (${(e as Error).message}).`,
        { cause: e },
      );
    }
    for (let b = 0; b < rows.length; b += BATCH_ROWS) {
      const batch: RowWithOrigin[] = [];
      for (let i = b; i < Math.min(b + BATCH_ROWS, rows.length); i++) {
        const row = rows[i] as Record<string, unknown>;
        for (const key in row) {
          const v = row[key];
          if (typeof v !== 'object' && typeof v !== 'bigint') continue;
          try {
            row[key] = plainValue(v);
          } catch (e) {
            if (e instanceof DataError && e.code === 'INVALID_UTF8')
              throw columnarUtf8Error(file, rowStart + i + 1, key);
            throw e;
          }
        }
        batch.push({ row, origin: { file, row: rowStart + i + 1 } });
      }
      yield batch;
    }
    rowStart = rowEnd;
  }
}
