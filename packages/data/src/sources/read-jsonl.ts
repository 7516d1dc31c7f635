import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import { recordSkip } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

/**
 * Streams a JSON Lines file one object per line (blank lines are ignored, not counted as rows).
 * A line that is not a JSON object fails with MALFORMED_ROW naming file and line, or is counted
 * in `stats` and skipped when `onBadRow` is 'skip'.
 */
export async function* readJsonl(file: string, stats: LoadStats, onBadRow: BadRowPolicy = 'error'): AsyncGenerator<RowWithOrigin> {
  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 });
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  try {
    for await (const text of lines) {
      line += 1;
      if (text.trim() === '') continue;
      let value: unknown;
      let reason: string | undefined;
      try {
        value = JSON.parse(text);
        if (value === null || typeof value !== 'object' || Array.isArray(value)) reason = `expected a JSON object, got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`;
      } catch (e) {
        reason = (e as Error).message;
      }
      if (reason !== undefined) {
        if (onBadRow === 'skip') {
          recordSkip(stats, { file, row: line, reason });
          continue;
        }
        throw new DataError('MALFORMED_ROW', `${file} line ${line} is not valid JSON Lines (${reason}). Fix or remove that line, or load with onBadRow: 'skip' to count and skip it.`);
      }
      yield { row: value as Record<string, unknown>, origin: { file, row: line } };
    }
  } catch (e) {
    throw fileError(file, e);
  } finally {
    lines.close();
    stream.destroy();
  }
}
