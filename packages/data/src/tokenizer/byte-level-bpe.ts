/**
 * A fast encoder for byte-level BPE tokenizers (GPT-2 family: Qwen2/3, Llama 3, Mistral-Nemo...),
 * built from tokenizer.json. @huggingface/tokenizers spends most of its time mapping bytes to
 * the byte-level alphabet with per-token TextEncoder calls and array joins; this encoder uses a
 * lookup table for ASCII and caches the ids of each pre-token (words repeat a lot), which makes
 * it several times faster. It covers exactly this configuration and returns undefined for any
 * other, so callers fall back to @huggingface/tokenizers:
 *   normalizer null or NFC; pre_tokenizer ByteLevel, or Sequence[Split(regex, Isolated), ByteLevel(use_regex false)];
 *   model BPE without byte_fallback, dropout, prefixes or suffixes; added tokens without lstrip/rstrip/single_word.
 * Tests check it id for id against @huggingface/tokenizers and an independent Python BPE.
 * BPE: Sennrich et al. 2016, https://arxiv.org/abs/1508.07909; byte-level alphabet: GPT-2.
 */
export type ByteLevelEncode = (text: string) => number[];

interface Json {
  [k: string]: unknown;
}

// GPT-2's regex, used by a plain ByteLevel pre-tokenizer with use_regex true.
const GPT2_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const CACHE_LIMIT = 200_000;

export function createByteLevelBpe(tokenizerJson: Json): ByteLevelEncode | undefined {
  const model = tokenizerJson.model as Json | undefined;
  if (
    model?.type !== 'BPE' ||
    model.byte_fallback ||
    model.dropout ||
    model.continuing_subword_prefix ||
    model.end_of_word_suffix
  )
    return undefined;
  const normalizer = tokenizerJson.normalizer as Json | null | undefined;
  if (normalizer && normalizer.type !== 'NFC') return undefined;
  const pattern = splitPattern(tokenizerJson.pre_tokenizer as Json | null | undefined);
  if (pattern === undefined) return undefined;
  let splitter: RegExp;
  try {
    splitter = new RegExp(translateInlineCaseInsensitive(pattern), 'gu');
  } catch {
    return undefined;
  }
  const added = (tokenizerJson.added_tokens as Json[] | undefined) ?? [];
  if (added.some((t) => t.lstrip || t.rstrip || t.single_word)) return undefined;
  const addedIds = new Map(added.map((t) => [t.content as string, t.id as number]));
  const addedRe = added.length
    ? new RegExp(
        `(${[...addedIds.keys()]
          .sort((a, b) => b.length - a.length)
          .map(escapeRegExp)
          .join('|')})`,
      )
    : undefined;

  const vocab = new Map(Object.entries(model.vocab as Record<string, number>));
  const ranks = new Map<string, number>();
  (model.merges as (string | [string, string])[]).forEach((m, i) => {
    ranks.set(typeof m === 'string' ? m : `${m[0]} ${m[1]}`, i);
  });
  const ignoreMerges = Boolean(model.ignore_merges);
  const byteChar = byteToUnicode();
  const encoder = new TextEncoder();
  const cache = new Map<string, number[]>();

  const toByteLevel = (piece: string): string => {
    let out = '';
    if (isAscii(piece)) for (let i = 0; i < piece.length; i++) out += byteChar[piece.charCodeAt(i)];
    else for (const b of encoder.encode(piece)) out += byteChar[b];
    return out;
  };

  const bpe = (word: string): number[] | undefined => {
    const whole = vocab.get(word);
    if (whole !== undefined && (ignoreMerges || word.length === 1)) return [whole];
    let parts = Array.from(word);
    while (parts.length > 1) {
      let best = Number.POSITIVE_INFINITY;
      let at = -1;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = ranks.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < best) {
          best = r;
          at = i;
        }
      }
      if (at < 0) break;
      const a = parts[at] as string;
      const b = parts[at + 1] as string;
      const merged: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) {
          merged.push(a + b);
          i += 1;
        } else merged.push(parts[i] as string);
      }
      parts = merged;
    }
    const ids: number[] = [];
    for (const p of parts) {
      const id = vocab.get(p);
      if (id === undefined) return undefined;
      ids.push(id);
    }
    return ids;
  };

  const encodePiece = (piece: string, out: number[]): boolean => {
    let ids = cache.get(piece);
    if (ids === undefined) {
      ids = bpe(toByteLevel(piece));
      if (ids === undefined) return false;
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(piece, ids);
    }
    for (const id of ids) out.push(id);
    return true;
  };

  const encodeSegment = (segment: string, out: number[]): boolean => {
    const text = normalizer && !isAscii(segment) ? segment.normalize('NFC') : segment;
    let last = 0;
    for (const m of text.matchAll(splitter)) {
      const start = m.index ?? 0;
      if (start > last && !encodePiece(text.slice(last, start), out)) return false;
      if (m[0].length > 0 && !encodePiece(m[0], out)) return false;
      last = start + m[0].length;
    }
    return last >= text.length || encodePiece(text.slice(last), out);
  };

  return (text: string): number[] => {
    const out: number[] = [];
    const parts = addedRe ? text.split(addedRe) : [text];
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      if (part === '') continue;
      if (i % 2 === 1) out.push(addedIds.get(part) as number);
      else if (!encodeSegment(part, out))
        throw new Error(
          `byte-level BPE: a symbol of ${JSON.stringify(part.slice(0, 40))} is not in the vocabulary`,
        );
    }
    return out;
  };
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return false;
  return true;
}

/** The split regex of a supported pre-tokenizer config, or undefined. */
function splitPattern(pre: Json | null | undefined): string | undefined {
  if (!pre) return undefined;
  if (pre.type === 'ByteLevel')
    return pre.add_prefix_space || pre.use_regex === false ? undefined : GPT2_PATTERN;
  if (pre.type !== 'Sequence') return undefined;
  const steps = pre.pretokenizers as Json[];
  if (steps.length !== 2) return undefined;
  const [split, byteLevel] = steps as [Json, Json];
  if (split.type !== 'Split' || split.behavior !== 'Isolated' || split.invert) return undefined;
  if (byteLevel.type !== 'ByteLevel' || byteLevel.add_prefix_space || byteLevel.use_regex !== false)
    return undefined;
  const p = split.pattern as { Regex?: string } | undefined;
  return p?.Regex;
}

/** JS has no `(?i:...)` groups (Node 20): spell letters inside them as [xX] classes. */
function translateInlineCaseInsensitive(pattern: string): string {
  return pattern.replace(
    /\(\?i:([^()\\]*)\)/g,
    (_, body: string) =>
      `(?:${body.replace(/[A-Za-z]/g, (c) => `[${c.toLowerCase()}${c.toUpperCase()}]`)})`,
  );
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** GPT-2's reversible byte -> printable character table. */
function byteToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const table = new Array<string>(256);
  for (const b of bs) table[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (table[b] === undefined) {
      table[b] = String.fromCharCode(256 + n);
      n += 1;
    }
  }
  return table;
}
