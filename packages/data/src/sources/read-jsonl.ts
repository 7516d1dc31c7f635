import { createReadStream } from 'node:fs';
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
  let line = 0;
  try {
    for await (const text of splitLines(stream as AsyncIterable<string>)) {
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
    stream.destroy();
  }
}

/** Lines of a text stream (LF or CRLF), without the line ends; a last line without LF is kept. */
async function* splitLines(chunks: AsyncIterable<string>): AsyncGenerator<string> {
  let rest = '';
  for await (const chunk of chunks) {
    const text = rest + chunk;
    let start = 0;
    let nl = text.indexOf('\n');
    const lines: string[] = [];
    while (nl >= 0) {
      lines.push(text.charCodeAt(nl - 1) === 13 ? text.slice(start, nl - 1) : text.slice(start, nl));
      start = nl + 1;
      nl = text.indexOf('\n', start);
    }
    rest = text.slice(start);
    yield* lines;
  }
  if (rest !== '') yield rest.charCodeAt(rest.length - 1) === 13 ? rest.slice(0, -1) : rest;
}
