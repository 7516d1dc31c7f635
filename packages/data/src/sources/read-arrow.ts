import { closeSync, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { RecordBatchReader } from 'apache-arrow';
import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { arrowColumnValues } from './arrow-column-values.js';
import { columnarUtf8Error, findInvalidUtf8 } from './columnar-utf8.js';
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
      const bad = findInvalidUtf8(batch);
      if (bad) throw columnarUtf8Error(file, row + bad.row + 1, bad.column);
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
    if (e instanceof DataError || (e as { code?: string }).code) throw fileError(file, e);
    throw arrowReadError(file, e);
  } finally {
    stream.destroy();
  }
}

const MAGIC = 'ARROW1';

/**
 * Why apache-arrow could not read `file`, in words: a file cut short (an IPC file whose closing
 * ARROW1 footer is missing, or a stream that ends inside a message) is named as such, where
 * apache-arrow says `Cannot read properties of null` or `Expected to read N bytes`.
 */
function arrowReadError(file: string, e: unknown): DataError {
  const message = (e as Error)?.message ?? String(e);
  const fd = openSync(file, 'r');
  let head = '';
  let tail = '';
  let size = 0;
  try {
    size = fstatSync(fd).size;
    const buf = Buffer.alloc(MAGIC.length);
    head = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
    tail =
      size >= buf.length
        ? buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, size - buf.length))
        : '';
  } finally {
    closeSync(fd);
  }
  const cutShort = (why: string) =>
    new DataError(
      'UNREADABLE_FILE',
      `${file} is truncated: ${why} (the file has ${size} bytes). Copy or download it again.`,
      { cause: e },
    );
  if (head === MAGIC && tail !== MAGIC)
    return cutShort(
      'an Arrow IPC file ends with its footer and the ARROW1 marker, this one does not',
    );
  const short = /Expected to read (\d+) (?:metadata )?bytes.*only read (\d+)/.exec(message);
  if (short)
    return cutShort(`it ends inside a record batch (${short[1]} bytes expected, ${short[2]} left)`);
  return new DataError(
    'UNREADABLE_FILE',
    `${file} is not a readable Arrow IPC file or stream (${message}).`,
    { cause: e },
  );
}
