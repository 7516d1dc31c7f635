import { isUtf8 } from 'node:buffer';
import { type Data, type RecordBatch, Type } from 'apache-arrow';
import { DataError } from '../errors.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/** What a Parquet string column holds in place of a value whose bytes are not UTF-8 (see {@link strictStringFromBytes}). */
export class InvalidUtf8Value {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * hyparquet's `stringFromBytes` parser, strict: bytes that are not UTF-8 become an
 * {@link InvalidUtf8Value} (hyparquet's own decoder would give U+FFFD), so the reader can name
 * the row and column (`plainValue` throws on it).
 */
export function strictStringFromBytes(bytes: Uint8Array): string | InvalidUtf8Value {
  if (!isUtf8(bytes)) return new InvalidUtf8Value(bytes);
  return decoder.decode(bytes);
}

/** The error for a string value that is not UTF-8 in row `row` (1-based), column `column` of a Parquet or Arrow file. */
export function columnarUtf8Error(file: string, row: number, column: string): DataError {
  return new DataError(
    'INVALID_UTF8',
    `${file} row ${row} column "${column}" holds a string that is not valid UTF-8. Write the ` +
      `file again from text decoded as UTF-8, or fix that value.`,
  );
}

/** Index (within `data`) of the first value holding a string that is not UTF-8, nested strings included; -1 if none. */
function firstInvalidIndex(data: Data): number {
  const typeId = data.type.typeId;
  if (typeId === Type.Utf8 || typeId === Type.LargeUtf8) {
    const values = data.values as Uint8Array | undefined;
    const offsets = data.valueOffsets as ArrayLike<number | bigint> | undefined;
    if (!values || !offsets || isUtf8(values)) return -1;
    for (let i = 0; i < data.length; i++) {
      const from = Number(offsets[data.offset + i]);
      if (!isUtf8(values.subarray(from, Number(offsets[data.offset + i + 1])))) return i;
    }
    return -1;
  }
  if (typeId === Type.Dictionary && data.dictionary) {
    const bad = data.dictionary.data.reduce(
      (found, d, k) => (found >= 0 ? found : firstInvalidIndex(d) >= 0 ? k : -1),
      -1,
    );
    if (bad < 0) return -1;
    // a bad dictionary entry: the first row that uses it (entries counted over the dictionary's chunks)
    let entry = firstInvalidIndex(data.dictionary.data[bad] as Data);
    for (let k = 0; k < bad; k++) entry += (data.dictionary.data[k] as Data).length;
    const keys = data.values as ArrayLike<number | bigint>;
    for (let i = 0; i < data.length; i++) if (Number(keys[data.offset + i]) === entry) return i;
    return -1;
  }
  const children = (data.children ?? []) as Data[];
  if (typeId === Type.Struct) {
    const found = children.map(firstInvalidIndex).filter((i) => i >= 0);
    return found.length > 0 ? Math.min(...found) : -1;
  }
  const child = children[0];
  if (!child) return -1;
  const inner = firstInvalidIndex(child);
  if (inner < 0) return -1;
  if (typeId === Type.FixedSizeList)
    return (
      Math.floor(inner / (data.type as unknown as { listSize: number }).listSize) - data.offset
    );
  // List, LargeList, Map: value i spans the child's [offsets[i], offsets[i + 1])
  const offsets = data.valueOffsets as ArrayLike<number | bigint>;
  for (let i = 0; i < data.length; i++) if (inner < Number(offsets[data.offset + i + 1])) return i;
  return -1;
}

/**
 * The first row (0-based, within `batch`) and column of an Arrow record batch holding a string
 * that is not UTF-8; undefined when every string is valid. Checks the raw UTF-8 buffers (fast),
 * before apache-arrow would decode them to U+FFFD.
 */
export function findInvalidUtf8(batch: RecordBatch): { row: number; column: string } | undefined {
  let best: { row: number; column: string } | undefined;
  batch.schema.fields.forEach((field, j) => {
    const child = batch.data.children[j];
    const row = child ? firstInvalidIndex(child) : -1;
    if (row >= 0 && (!best || row < best.row)) best = { row, column: field.name };
  });
  return best;
}
