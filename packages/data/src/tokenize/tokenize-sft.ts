import type { SftExample } from '../formats/sft-example.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { ShiftedSequence } from './sequence-layout.js';
import { toShiftedSequence } from './sequence-layout.js';
import type { TokenizeMessagesOptions } from './tokenize-messages.js';
import { tokenizeMessages } from './tokenize-messages.js';
import { tokenizeText } from './tokenize-text.js';

/** Options of {@link tokenizeSft}. */
export interface TokenizeSftOptions extends TokenizeMessagesOptions {
  /** Truncate every sequence to this many positions. */
  maxLength?: number;
}

/**
 * An SFT example as training sequences in the shifted layout. A sequence with no trained
 * token left (no assistant turn, or truncation cut them all) is not returned but counted in
 * `dropped`, so callers can report it instead of losing it silently.
 */
export function tokenizeSft(
  tokenizer: Tokenizer,
  example: SftExample,
  options: TokenizeSftOptions = {},
): { sequences: ShiftedSequence[]; dropped: number } {
  const seqs =
    example.kind === 'text'
      ? [tokenizeText(tokenizer, example.prompt, example.response)]
      : tokenizeMessages(tokenizer, example.messages, options);
  const sequences: ShiftedSequence[] = [];
  let dropped = 0;
  for (const s of seqs) {
    const shifted = s.tokens.length >= 2 ? toShiftedSequence(s, options.maxLength) : undefined;
    if (shifted?.actionMask.includes(1)) sequences.push(shifted);
    else dropped += 1;
  }
  return { sequences, dropped };
}
