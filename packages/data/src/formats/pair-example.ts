import type { Row } from '../sources/row.js';
import type { ChatMessage } from './chat-message.js';
import type { DataKeys } from './data-keys.js';
import { resolveDataKeys } from './data-keys.js';
import type { RowContext } from './row-fields.js';
import { asMessages, hasField, messagesField, missingKey, stringField } from './row-fields.js';

/**
 * A preference pair for RM and DPO: raw text, or a conversation whose chosen and rejected
 * completions are full message lists (a string reply becomes one assistant turn after the
 * prompt messages; a list is appended to them unless it already starts with them).
 */
export type PairExample =
  | { kind: 'text'; prompt: string; chosen: string; rejected: string }
  | { kind: 'messages'; chosen: ChatMessage[]; rejected: ChatMessage[] };

/**
 * Reads a RM/DPO row: `{messages, chosen, rejected}`, `{prompt, chosen, rejected}`, or (RL2
 * HEAD, Skywork and UltraFeedback's own form) `{chosen, rejected}` as two full conversations.
 */
export function toPairExample(
  row: Row,
  keys: Partial<DataKeys> = {},
  ctx: Omit<RowContext, 'expected'> & { trainer?: string } = {},
): PairExample {
  const k = resolveDataKeys(keys);
  const c = {
    ...ctx,
    expected:
      `${ctx.trainer ?? 'RM/DPO'} expects ` +
      `{${k.promptKey}, ${k.chosenKey}, ${k.rejectedKey}} or ` +
      `{${k.messagesKey}, ${k.chosenKey}, ${k.rejectedKey}}`,
  };
  if (hasField(row, k.messagesKey)) {
    const prompt = messagesField(row, k.messagesKey, c);
    return {
      kind: 'messages',
      chosen: completion(row, k.chosenKey, prompt, c),
      rejected: completion(row, k.rejectedKey, prompt, c),
    };
  }
  if (!hasField(row, k.promptKey)) {
    if (Array.isArray(row[k.chosenKey]) && Array.isArray(row[k.rejectedKey]))
      return {
        kind: 'messages',
        chosen: asMessages(row[k.chosenKey], k.chosenKey, c),
        rejected: asMessages(row[k.rejectedKey], k.rejectedKey, c),
      };
    throw missingKey(row, k.promptKey, c);
  }
  return {
    kind: 'text',
    prompt: stringField(row, k.promptKey, c),
    chosen: stringField(row, k.chosenKey, c),
    rejected: stringField(row, k.rejectedKey, c),
  };
}

function completion(row: Row, key: string, prompt: ChatMessage[], c: RowContext): ChatMessage[] {
  if (!hasField(row, key)) throw missingKey(row, key, c);
  const v = row[key];
  if (typeof v === 'string') return [...prompt, { role: 'assistant', content: v }];
  const list = asMessages(v, key, c);
  const startsWithPrompt = prompt.every(
    (m, i) => list[i]?.role === m.role && list[i]?.content === m.content,
  );
  return startsWithPrompt && list.length > prompt.length ? list : [...prompt, ...list];
}
