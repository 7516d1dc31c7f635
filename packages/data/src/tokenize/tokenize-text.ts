import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { TokenSequence } from './token-sequence.js';

/**
 * Raw prompt/response text: prompt tokens (mask 0) then response tokens plus EOS (mask 1), as
 * RL2 does for `{prompt, response}` rows. The two parts are tokenized separately so the mask
 * boundary is exact.
 */
export function tokenizeText(
  tokenizer: Tokenizer,
  prompt: string,
  response: string,
): TokenSequence {
  const p = tokenizer.encode(prompt);
  const r = tokenizer.encode(response);
  r.push(tokenizer.eosTokenId);
  return { tokens: [...p, ...r], mask: [...p.map(() => 0), ...r.map(() => 1)] };
}
