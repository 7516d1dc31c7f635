import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { readUtf8 } from './read-utf8.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import { recordSkip } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

/**
 * Streams a CSV file in batches of rows (RFC 4180: a header row, comma separated, `"` quotes with `""` escapes,
 * quoted fields may span lines, CRLF or LF). Values stay strings, as the header names them.
 * A record with a different field count than the header is MALFORMED_ROW (file and line named),
 * or counted and skipped with `onBadRow: 'skip'`.
 */
export async function* readCsv(
  file: string,
  stats: LoadStats,
  onBadRow: BadRowPolicy = 'error',
): AsyncGenerator<RowWithOrigin[]> {
  const chunks = readUtf8(file);
  let header: string[] | undefined;
  let fields: string[] = [];
  let field = '';
  let inQuotes = false;
  let quoteSeen = false; // previous char was a quote inside a quoted field
  let line = 1;
  let recordLine = 1;
  let first = true;
  const records: [string[], number][] = [];
  const endRecord = () => {
    fields.push(field);
    field = '';
    if (!(fields.length === 1 && fields[0] === '')) records.push([fields, recordLine]);
    fields = [];
  };
  /** Turns the finished records into rows (the first is the header); bad ones error or are skipped. */
  const takeRows = (): RowWithOrigin[] => {
    const batch: RowWithOrigin[] = [];
    for (const [values, at] of records.splice(0)) {
      if (!header) {
        header = values;
        continue;
      }
      const row = toRow(header, values);
      if (row === undefined) {
        const reason = `${values.length} fields where the header has ${header.length}`;
        if (onBadRow === 'skip') {
          recordSkip(stats, { file, row: at, reason });
          continue;
        }
        throw new DataError(
          'MALFORMED_ROW',
          `${file} line ${at}: ${reason} (${header.join(',')}). Quote fields that contain commas or newlines.`,
          { skippable: true },
        );
      }
      batch.push({ row, origin: { file, row: at } });
    }
    return batch;
  };
  try {
    for await (const chunk of chunks) {
      let text = chunk;
      if (first) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      let runStart = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inQuotes) {
          if (quoteSeen) {
            quoteSeen = false;
            if (c === QUOTE) {
              field += '"';
              runStart = i + 1;
              continue;
            }
            inQuotes = false; // closing quote; fall through to handle c unquoted
          } else if (c === QUOTE) {
            field += text.slice(runStart, i);
            runStart = i + 1;
            quoteSeen = true;
            continue;
          } else {
            if (c === LF) line += 1;
            continue;
          }
        }
        if (c === QUOTE && field === '' && runStart === i) {
          inQuotes = true;
          runStart = i + 1;
        } else if (c === COMMA) {
          field += text.slice(runStart, i);
          fields.push(field);
          field = '';
          runStart = i + 1;
        } else if (c === LF || c === CR) {
          field += text.slice(runStart, i);
          if (c === LF) {
            endRecord();
            line += 1;
            recordLine = line;
          } else if (text.charCodeAt(i + 1) !== LF && i + 1 < text.length) {
            endRecord();
          }
          runStart = i + 1;
        }
      }
      if (inQuotes && !quoteSeen) field += text.slice(runStart);
      else if (!inQuotes) field += text.slice(runStart);
      const batch = takeRows();
      if (batch.length > 0) yield batch;
    }
  } catch (e) {
    throw fileError(file, e);
  }
  if (inQuotes && !quoteSeen)
    throw new DataError(
      'MALFORMED_ROW',
      `${file} line ${recordLine}: a quoted field is never closed before the end of the file.`,
    );
  if (field !== '' || fields.length > 0) {
    endRecord();
    const rest = takeRows();
    if (rest.length > 0) yield rest;
  }
  if (!header)
    throw new DataError(
      'EMPTY_DATASET',
      `${file} is empty: a CSV file needs a header row naming the columns.`,
    );
}

function toRow(header: string[], values: string[]): Record<string, unknown> | undefined {
  if (values.length !== header.length) return undefined;
  const row: Record<string, unknown> = {};
  for (let j = 0; j < header.length; j++) row[header[j] as string] = values[j];
  return row;
}
