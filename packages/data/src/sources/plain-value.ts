import { Vector } from 'apache-arrow';
import { DataError } from '../errors.js';
import { InvalidUtf8Value } from './columnar-utf8.js';

/**
 * Converts a value decoded by the Parquet or Arrow readers to plain JS: bigint -> number
 * (when it fits in 2^53, else kept as a decimal string), Arrow Vectors -> arrays, Arrow
 * struct rows and maps -> objects, typed arrays -> arrays, Dates kept. A Parquet string that is
 * not UTF-8 ({@link InvalidUtf8Value}) throws INVALID_UTF8 (the reader adds the row and column).
 */
export function plainValue(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return value;
    case 'bigint':
      return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER)
        ? Number(value)
        : value.toString();
    default:
      break;
  }
  if (value === null || value instanceof Date) return value;
  if (value instanceof InvalidUtf8Value)
    throw new DataError('INVALID_UTF8', 'a string value is not valid UTF-8');
  if (value instanceof Vector) return Array.from(value as Iterable<unknown>, plainValue);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      const p = plainValue(v);
      if (p !== v) {
        out ??= value.slice();
        out[i] = p;
      }
    }
    return out ?? value;
  }
  if (ArrayBuffer.isView(value)) {
    return value instanceof Uint8Array
      ? value
      : Array.from(value as unknown as ArrayLike<number | bigint>, plainValue);
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return plainObject((value as { toJSON(): unknown }).toJSON() as Record<string, unknown>);
  }
  return plainObject(value as Record<string, unknown>);
}

function plainObject(obj: Record<string, unknown>): Record<string, unknown> {
  if (obj instanceof Map) return plainObject(Object.fromEntries(obj));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) out[key] = plainValue(obj[key]);
  return out;
}
