import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { readUtf8 } from './read-utf8.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import { recordSkip } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

/**
 * Streams a JSON Lines file in batches of rows (one batch per 1 MiB read), one object per line
 * (blank lines are ignored, not counted as rows). A line that is not a JSON object fails with
 * MALFORMED_ROW naming file and line, or is counted in `stats` and skipped when `onBadRow` is 'skip'.
 */
export async function* readJsonl(
  file: string,
  stats: LoadStats,
  onBadRow: BadRowPolicy = 'error',
): AsyncGenerator<RowWithOrigin[]> {
  const chunks = readUtf8(file);
  let line = 0;
  const parse = (text: string, batch: RowWithOrigin[]) => {
    line += 1;
    if (text.trim() === '') return;
    let value: unknown;
    let reason: string | undefined;
    try {
      value = JSON.parse(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        reason = `expected a JSON object, got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`;
    } catch (e) {
      reason = (e as Error).message;
    }
    if (reason === undefined) {
      batch.push({ row: value as Record<string, unknown>, origin: { file, row: line } });
      return;
    }
    if (onBadRow !== 'skip') {
      throw new DataError(
        'MALFORMED_ROW',
        `${file} line ${line} is not valid JSON Lines (${reason}). Fix or remove that line.`,
        { skippable: true },
      );
    }
    recordSkip(stats, { file, row: line, reason });
  };
  try {
    let rest = '';
    for await (const chunk of chunks) {
      const text = rest + chunk;
      const batch: RowWithOrigin[] = [];
      let start = 0;
      let nl = text.indexOf('\n');
      while (nl >= 0) {
        parse(
          text.charCodeAt(nl - 1) === 13 ? text.slice(start, nl - 1) : text.slice(start, nl),
          batch,
        );
        start = nl + 1;
        nl = text.indexOf('\n', start);
      }
      rest = text.slice(start);
      if (batch.length > 0) yield batch;
    }
    if (rest !== '') {
      const batch: RowWithOrigin[] = [];
      parse(rest.charCodeAt(rest.length - 1) === 13 ? rest.slice(0, -1) : rest, batch);
      if (batch.length > 0) yield batch;
    }
  } catch (e) {
    throw fileError(file, e);
  }
}
