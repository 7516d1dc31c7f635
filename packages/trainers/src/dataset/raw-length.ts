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

/**
 * The example with every text longer than 2 * (limit + 2) * longestToken units cut to that
 * length, for truncation to `limit` tokens: a cut text still holds more than twice the tokens
 * the limit keeps, so the kept first `limit` tokens of each sequence lie far before the cut
 * (BPE merges change only next to it), and a 50 MB reply is tokenized as a few hundred kB.
 */
export function clipTexts<T extends SftExample | PairExample>(
  example: T,
  tokenizer: Tokenizer,
  limit: number,
): T {
  const max = 2 * (limit + 2) * tokenizer.longestToken;
  const cut = (t: string) => (t.length > max ? t.slice(0, max) : t);
  const cutAll = <M extends { content: string }>(list: M[]) =>
    list.map((m) => (typeof m.content === 'string' ? { ...m, content: cut(m.content) } : m));
  const e = example as SftExample | PairExample;
  if (e.kind === 'text') {
    if ('response' in e) return { ...e, prompt: cut(e.prompt), response: cut(e.response) } as T;
    return { ...e, prompt: cut(e.prompt), chosen: cut(e.chosen), rejected: cut(e.rejected) } as T;
  }
  if ('messages' in e) return { ...e, messages: cutAll(e.messages) } as T;
  return { ...e, chosen: cutAll(e.chosen), rejected: cutAll(e.rejected) } as T;
}
