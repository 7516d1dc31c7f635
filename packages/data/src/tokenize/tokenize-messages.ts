import { DataError } from '../errors.js';
import type { ChatMessage } from '../formats/chat-message.js';
import type { ChatTemplateOptions, Tokenizer } from '../tokenizer/tokenizer.js';
import type { TokenSequence } from './token-sequence.js';

/** Options of {@link tokenizeMessages}: tools and template kwargs go to every rendering. */
export type TokenizeMessagesOptions = Pick<ChatTemplateOptions, 'tools' | 'templateKwargs'>;

/**
 * Tokenizes a conversation turn by turn with the prefix rule (RL2's tokenize_messages):
 * after each turn render messages[0..i] (with the generation prompt when the next turn is the
 * assistant's). If the rendering extends the previous one, tokenize only the new suffix and
 * append it, mask 1 for an assistant turn, 0 otherwise. If it does not (a template that
 * rewrites history, e.g. Qwen3 dropping earlier <think> blocks), close the sequence and start a
 * new one from the full rendering, with the context masked 0. One conversation can therefore
 * give several sequences; each holds at least one assistant token unless there is none at all.
 */
export function tokenizeMessages(
  tokenizer: Tokenizer,
  messages: ChatMessage[],
  options: TokenizeMessagesOptions = {},
): TokenSequence[] {
  const sequences: TokenSequence[] = [];
  let current: TokenSequence = { tokens: [], mask: [] };
  let prev = '';
  const render = (upTo: number, addGenerationPrompt: boolean) =>
    tokenizer.applyChatTemplate(messages.slice(0, upTo), { ...options, addGenerationPrompt });
  const append = (text: string, m: 0 | 1) => {
    const ids = tokenizer.encode(text);
    for (const id of ids) {
      current.tokens.push(id);
      current.mask.push(m);
    }
  };
  for (let i = 0; i < messages.length; i++) {
    const isAssistant = messages[i]?.role === 'assistant';
    const nextIsAssistant = messages[i + 1]?.role === 'assistant';
    const text = render(i + 1, !isAssistant && nextIsAssistant);
    if (text.startsWith(prev)) {
      append(text.slice(prev.length), isAssistant ? 1 : 0);
      prev = text;
      continue;
    }
    // History was rewritten: keep what we have, restart from the full rendering.
    if (current.tokens.length > 0) sequences.push(current);
    current = { tokens: [], mask: [] };
    if (!isAssistant) {
      append(text, 0);
      prev = text;
      continue;
    }
    const context = render(i, true);
    if (!text.startsWith(context)) {
      throw new DataError(
        'TOKENIZER',
        `The chat template renders assistant turn ${i} in a way that does not extend the ` +
          `conversation before it with the generation prompt; cannot tell which tokens are the assistant's.`,
      );
    }
    append(context, 0);
    append(text.slice(context.length), 1);
    prev = text;
  }
  if (current.tokens.length > 0) sequences.push(current);
  return sequences;
}
