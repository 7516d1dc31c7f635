import type { Row } from '../sources/row.js';
import type { ChatMessage } from './chat-message.js';
import type { DataKeys } from './data-keys.js';
import { resolveDataKeys } from './data-keys.js';
import type { RowContext } from './row-fields.js';
import { hasField, messagesField, missingKey, stringField } from './row-fields.js';

/** A PPO/GRPO prompt: raw text or messages, the answer for the reward, and the whole row for the environment. */
export type PpoExample = (
  | { kind: 'text'; prompt: string }
  | { kind: 'messages'; messages: ChatMessage[] }
) & {
  answer: unknown;
  row: Row;
};

/**
 * Reads a PPO row: `{messages, answer}` or `{prompt, answer}`. The answer may be any JSON value;
 * set `requireAnswer: false` for environments that need none. The row is kept whole.
 */
export function toPpoExample(
  row: Row,
  keys: Partial<DataKeys> = {},
  ctx: Omit<RowContext, 'expected'> & { requireAnswer?: boolean } = {},
): PpoExample {
  const k = resolveDataKeys(keys);
  const c = {
    ...ctx,
    expected: `PPO expects {${k.promptKey}, ${k.answerKey}} or {${k.messagesKey}, ${k.answerKey}}`,
  };
  if ((ctx.requireAnswer ?? true) && !hasField(row, k.answerKey))
    throw missingKey(row, k.answerKey, c);
  const answer = row[k.answerKey];
  if (hasField(row, k.messagesKey))
    return { kind: 'messages', messages: messagesField(row, k.messagesKey, c), answer, row };
  if (!hasField(row, k.promptKey)) throw missingKey(row, k.promptKey, c);
  return { kind: 'text', prompt: stringField(row, k.promptKey, c), answer, row };
}
