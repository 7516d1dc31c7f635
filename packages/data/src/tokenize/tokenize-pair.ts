import type { PairExample } from '../formats/pair-example.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { RewardSequence, ShiftedSequence } from './sequence-layout.js';
import { toRewardSequence, toShiftedSequence } from './sequence-layout.js';
import type { TokenSequence } from './token-sequence.js';
import type { TokenizeMessagesOptions } from './tokenize-messages.js';
import { tokenizeMessages } from './tokenize-messages.js';
import { tokenizeText } from './tokenize-text.js';

/** Options of the pair tokenizers. */
export interface TokenizePairOptions extends TokenizeMessagesOptions {
  maxLength?: number;
}

/** The chosen and rejected sides of a pair as token sequences (the last sequence of each conversation: the one holding the final reply). */
export function tokenizePairSides(
  tokenizer: Tokenizer,
  example: PairExample,
  options: TokenizeMessagesOptions = {},
): { chosen: TokenSequence; rejected: TokenSequence } {
  if (example.kind === 'text') {
    return {
      chosen: tokenizeText(tokenizer, example.prompt, example.chosen),
      rejected: tokenizeText(tokenizer, example.prompt, example.rejected),
    };
  }
  const last = (msgs: typeof example.chosen) =>
    tokenizeMessages(tokenizer, msgs, options).at(-1) ?? { tokens: [], mask: [] };
  return { chosen: last(example.chosen), rejected: last(example.rejected) };
}

/** A DPO pair: both sides in the shifted layout. */
export function tokenizeDpoPair(
  tokenizer: Tokenizer,
  example: PairExample,
  options: TokenizePairOptions = {},
): { chosen: ShiftedSequence; rejected: ShiftedSequence } {
  const { chosen, rejected } = tokenizePairSides(tokenizer, example, options);
  return {
    chosen: toShiftedSequence(chosen, options.maxLength),
    rejected: toShiftedSequence(rejected, options.maxLength),
  };
}

/** An RM pair: both sides unshifted, the reward read at the last token (eosMask). */
export function tokenizeRmPair(
  tokenizer: Tokenizer,
  example: PairExample,
  options: TokenizePairOptions = {},
): { chosen: RewardSequence; rejected: RewardSequence } {
  const { chosen, rejected } = tokenizePairSides(tokenizer, example, options);
  return {
    chosen: toRewardSequence(chosen, options.maxLength),
    rejected: toRewardSequence(rejected, options.maxLength),
  };
}
