import { DataError } from '../errors.js';
import { fileError } from './file-error.js';
import { readUtf8 } from './read-utf8.js';
import { readJsonl } from './read-jsonl.js';
import type { BadRowPolicy, LoadStats } from './row.js';
import { recordSkip } from './row.js';
import type { RowWithOrigin } from './row-with-origin.js';

const OPEN_BRACE = 123;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const CLOSE_BRACE = 125;
const QUOTE = 34;
const COMMA = 44;
const NEWLINE = 10;

/**
 * Streams a `.json` file in batches of rows. A top-level array of objects is split element by element without
 * loading the file whole (a small bracket/string scanner finds element boundaries, each element
 * goes through JSON.parse). A file whose first character is `{` is read as JSON Lines, as
 * Python `datasets` does.
 */
export async function* readJson(
  file: string,
  stats: LoadStats,
  onBadRow: BadRowPolicy = 'error',
): AsyncGenerator<RowWithOrigin[]> {
  if ((await firstSignificantChar(file)) === OPEN_BRACE) {
    yield* readJsonl(file, stats, onBadRow);
    return;
  }
  const chunks = readUtf8(file);
  let started = false;
  let ended = false;
  let buf = '';
  let depth = 0; // bracket depth inside the top-level array
  let inString = false;
  let escaped = false;
  let elemStart = -1;
  let line = 1;
  let elemLine = 1;
  let index = 0;
  try {
    for await (const chunk of chunks) {
      const base = buf.length;
      buf += chunk;
      let nextBackslash = -1; // index of the next backslash at or after i (Infinity: none in buf)
      const ready: [string, number][] = [];
      for (let i = base; i < buf.length; i++) {
        if (inString) {
          // Jump to the next quote or backslash (JSON strings hold no raw newlines).
          if (escaped) {
            escaped = false;
            continue;
          }
          const q = buf.indexOf('"', i);
          if (nextBackslash < i) {
            nextBackslash = buf.indexOf('\\', i);
            if (nextBackslash < 0) nextBackslash = Number.POSITIVE_INFINITY;
          }
          const b = nextBackslash === Number.POSITIVE_INFINITY ? -1 : nextBackslash;
          if (q < 0 && b < 0) {
            i = buf.length;
            break;
          }
          if (b >= 0 && (q < 0 || b < q)) {
            i = b;
            escaped = true;
          } else {
            i = q;
            inString = false;
          }
          continue;
        }
        const c = buf.charCodeAt(i);
        if (c === NEWLINE) line += 1;
        if (c === QUOTE) {
          inString = true;
          if (elemStart < 0 && started) [elemStart, elemLine] = [i, line];
          continue;
        }
        if (!started) {
          if (c === OPEN_BRACKET) started = true;
          else if (c > 32)
            throw new DataError(
              'WRONG_TYPE',
              `${file} is not a JSON array of objects nor JSON Lines (first ` +
                `character ${JSON.stringify(String.fromCharCode(c))}). Save it as [{...}, ...] ` +
                `or one object per line.`,
            );
          continue;
        }
        if (ended) {
          if (c > 32)
            throw new DataError(
              'MALFORMED_ROW',
              `${file} line ${line} has text after the closing ] of the top-level array.`,
            );
          continue;
        }
        if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          if (depth === 0 && elemStart < 0) [elemStart, elemLine] = [i, line];
          depth += 1;
        } else if (c === CLOSE_BRACE || (c === CLOSE_BRACKET && depth > 0)) {
          depth -= 1;
        } else if (depth === 0 && (c === COMMA || c === CLOSE_BRACKET)) {
          if (elemStart >= 0) ready.push([buf.slice(elemStart, i), elemLine]);
          else if (c === COMMA) ready.push(['', line]);
          elemStart = -1;
          if (c === CLOSE_BRACKET) ended = true;
        } else if (depth === 0 && elemStart < 0 && c > 32) {
          [elemStart, elemLine] = [i, line];
        }
      }
      const batch: RowWithOrigin[] = [];
      for (const [text, at] of ready) {
        index += 1;
        const parsed = parseElement(text);
        if (typeof parsed === 'string') {
          if (onBadRow === 'skip') {
            recordSkip(stats, { file, row: index, reason: parsed });
            continue;
          }
          throw new DataError(
            'MALFORMED_ROW',
            `${file} element ${index} (line ${at}) is not a valid JSON object (${parsed}). Fix or remove it.`,
            { skippable: true },
          );
        }
        batch.push({ row: parsed, origin: { file, row: index } });
      }
      if (batch.length > 0) yield batch;
      // keep only the unfinished element
      if (elemStart >= 0) {
        buf = buf.slice(elemStart);
        elemStart = 0;
      } else buf = '';
    }
  } catch (e) {
    throw fileError(file, e);
  }
  if (!started)
    throw new DataError(
      'EMPTY_DATASET',
      `${file} is empty: expected a JSON array of objects or JSON Lines.`,
    );
  if (!ended)
    throw new DataError(
      'MALFORMED_ROW',
      `${file} ends before the closing ] of its top-level array (line ${line}): the file is truncated or malformed.`,
    );
}

function parseElement(text: string): Record<string, unknown> | string {
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      return `expected an object, got ${text.slice(0, 40)}`;
    return v as Record<string, unknown>;
  } catch (e) {
    return text === '' ? 'empty element (two commas in a row?)' : (e as Error).message;
  }
}

async function firstSignificantChar(file: string): Promise<number | undefined> {
  const chunks = readUtf8(file, 4096);
  try {
    for await (const chunk of chunks) {
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk.charCodeAt(i);
        if (c > 32 && c !== 0xfeff) return c;
      }
    }
  } catch (e) {
    throw fileError(file, e);
  }
  return undefined;
}
