import type { PairExample, SftExample, Tokenizer } from '@rl2/data';

/** The longest text of an example that is tokenized whole (a prompt, reply or message content). */
function longestText(example: SftExample | PairExample): number {
  const texts: string[] = [];
  if (example.kind === 'text') {
    texts.push(example.prompt);
    if ('response' in example) texts.push(example.response);
    else texts.push(example.chosen, example.rejected);
  } else {
    const lists = 'messages' in example ? [example.messages] : [example.chosen, example.rejected];
    for (const list of lists) for (const m of list) texts.push(String(m.content ?? ''));
  }
  return Math.max(0, ...texts.map((t) => t.length));
}

/**
 * The fewest tokens the example's longest text can take when that proves it over `limit`
 * tokens, else undefined. No token covers more than `tokenizer.longestToken` units of text (one
 * more each side for tokens that straddle the text's edges), so this is decided without
 * tokenizing: a 50 MB row is refused in microseconds instead of tokenized into gigabytes.
 */
export function surelyOverTokens(
  example: SftExample | PairExample,
  tokenizer: Tokenizer,
  limit: number,
): { chars: number; tokens: number } | undefined {
  const chars = longestText(example);
  const tokens = Math.floor(chars / tokenizer.longestToken) - 2;
  return tokens > limit ? { chars, tokens } : undefined;
}
