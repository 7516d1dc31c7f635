import type { Row } from '../sources/row.js';
import type { ChatMessage } from './chat-message.js';
import type { DataKeys } from './data-keys.js';
import { resolveDataKeys } from './data-keys.js';
import type { RowContext } from './row-fields.js';
import { hasField, messagesField, missingKey, stringField } from './row-fields.js';

/** An SFT example: raw prompt/response text, or a (multi-turn) conversation. */
export type SftExample =
  | { kind: 'text'; prompt: string; response: string }
  | { kind: 'messages'; messages: ChatMessage[] };

/**
 * Reads an SFT row: `{messages}` when the messages key is present, else `{prompt, response}`.
 * Missing or mistyped keys fail with the key, the row and the expected format named.
 */
export function toSftExample(
  row: Row,
  keys: Partial<DataKeys> = {},
  ctx: Omit<RowContext, 'expected'> = {},
): SftExample {
  const k = resolveDataKeys(keys);
  const c = {
    ...ctx,
    expected: `SFT expects {${k.promptKey}, ${k.responseKey}} or {${k.messagesKey}}`,
  };
  if (hasField(row, k.messagesKey))
    return { kind: 'messages', messages: messagesField(row, k.messagesKey, c) };
  if (!hasField(row, k.promptKey)) throw missingKey(row, k.promptKey, c);
  return {
    kind: 'text',
    prompt: stringField(row, k.promptKey, c),
    response: stringField(row, k.responseKey, c),
  };
}
