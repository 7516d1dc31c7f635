import { createReadStream } from 'node:fs';
import { RecordBatchReader } from 'apache-arrow';
import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { arrowColumnValues } from './arrow-column-values.js';
import type { RowWithOrigin } from './row-with-origin.js';

const BATCH_ROWS = 4096;

/**
 * Streams an Arrow IPC file or stream (`.arrow`; the format is detected from the magic bytes)
 * one record batch at a time, in batches of at most 4096 rows. These are the files Python `datasets` writes with
 * save_to_disk and in its cache (data-00000-of-00001.arrow, IPC stream format).
 */
export async function* readArrow(file: string): AsyncGenerator<RowWithOrigin[]> {
  const stream = createReadStream(file, { highWaterMark: 1 << 20 });
  let row = 0;
  try {
    const reader = await RecordBatchReader.from(stream as unknown as AsyncIterable<Uint8Array>);
    for await (const batch of reader) {
      const names = batch.schema.fields.map((f) => f.name);
      const columns = names.map((_, j) => {
        const child = batch.getChildAt(j);
        return child ? arrowColumnValues(child) : new Array<unknown>(batch.numRows).fill(null);
      });
      for (let b = 0; b < batch.numRows; b += BATCH_ROWS) {
        const rows: RowWithOrigin[] = [];
        for (let i = b; i < Math.min(b + BATCH_ROWS, batch.numRows); i++) {
          const out: Record<string, unknown> = {};
          for (let j = 0; j < names.length; j++) out[names[j] as string] = columns[j]?.[i];
          row += 1;
          rows.push({ row: out, origin: { file, row } });
        }
        yield rows;
      }
    }
  } catch (e) {
    if ((e as { code?: string }).code) throw fileError(file, e);
    throw new DataError('UNREADABLE_FILE', `${file} is not a readable Arrow IPC file or stream (${(e as Error).message}).`, { cause: e });
  } finally {
    stream.destroy();
  }
}
