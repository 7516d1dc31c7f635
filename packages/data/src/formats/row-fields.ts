import { DataError } from '../errors.js';
import type { Row, RowOrigin } from '../sources/row.js';
import { describeOrigin } from '../sources/row.js';
import type { ChatMessage } from './chat-message.js';

/** Where a row sits and what format the trainer expects, for error messages. */
export interface RowContext {
  origin?: RowOrigin;
  /** Index of the row in the loaded dataset, used when origin is unknown. */
  index?: number;
  /** e.g. `SFT expects {prompt, response} or {messages}`. */
  expected: string;
}

function where(ctx: RowContext): string {
  return ctx.origin ? describeOrigin(ctx.origin) : `row ${ctx.index ?? '?'}`;
}

/** The string at `key`, or MISSING_KEY / WRONG_TYPE naming key, row and expected format. */
export function stringField(row: Row, key: string, ctx: RowContext): string {
  const v = row[key];
  if (v === undefined || v === null) throw missingKey(row, key, ctx);
  if (typeof v !== 'string')
    throw new DataError(
      'WRONG_TYPE',
      `${where(ctx)}: key "${key}" must be a string, got ${typeName(v)}. ${ctx.expected}.`,
    );
  return v;
}

/** The chat messages at `key` (a list of {role, content}), or MISSING_KEY / WRONG_TYPE. */
export function messagesField(row: Row, key: string, ctx: RowContext): ChatMessage[] {
  const v = row[key];
  if (v === undefined || v === null) throw missingKey(row, key, ctx);
  return asMessages(v, key, ctx);
}

/** Checks that `v` is a non-empty list of {role: string, content: string}. */
export function asMessages(v: unknown, key: string, ctx: RowContext): ChatMessage[] {
  if (!Array.isArray(v))
    throw new DataError(
      'WRONG_TYPE',
      `${where(ctx)}: key "${key}" must be a list of {role, content} messages, got ${typeName(v)}. ${ctx.expected}.`,
    );
  if (v.length === 0)
    throw new DataError(
      'WRONG_TYPE',
      `${where(ctx)}: key "${key}" is an empty message list. ${ctx.expected}.`,
    );
  v.forEach((m, i) => {
    const msg = m as { role?: unknown; content?: unknown } | null;
    if (
      msg === null ||
      typeof msg !== 'object' ||
      typeof msg.role !== 'string' ||
      !(typeof msg.content === 'string' || msg.content === null || msg.content === undefined)
    ) {
      throw new DataError(
        'WRONG_TYPE',
        `${where(ctx)}: ${key}[${i}] must be {role: string, content: string}, got ${JSON.stringify(m)?.slice(0, 80)}.`,
      );
    }
  });
  return v.map((m) =>
    (m as ChatMessage).content == null
      ? { ...(m as ChatMessage), content: '' }
      : (m as ChatMessage),
  );
}

/** True when `row` has a non-null value at `key`. */
export function hasField(row: Row, key: string): boolean {
  return row[key] !== undefined && row[key] !== null;
}

/**
 * MISSING_KEY naming the key, the row (and its keys) and the format expected; a key that is
 * there with a null value (a Parquet or Arrow null, a JSON null) is said to be null, not missing.
 */
export function missingKey(row: Row, key: string, ctx: RowContext): DataError {
  if (key in row && row[key] === null)
    return new DataError(
      'MISSING_KEY',
      `${where(ctx)}: key "${key}" is null (an empty Parquet/Arrow cell or a JSON null). ` +
        `${ctx.expected}; fill the value in or remove the row.`,
    );
  return new DataError(
    'MISSING_KEY',
    `${where(ctx)} has no key "${key}" (its ` +
      `keys: ${Object.keys(row).join(', ') || 'none'}). ${ctx.expected}; rename the column or ` +
      `set the matching *_key option.`,
  );
}

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)?.slice(0, 40)}`;
}
