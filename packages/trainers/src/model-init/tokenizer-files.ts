import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TrainersError } from '../errors.js';

/** The HF tokenizer files copied next to a model when present. */
const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'vocab.json',
  'merges.txt',
  'generation_config.json',
] as const;

/** Token ids a model config needs from its tokenizer. */
export interface TokenizerFacts {
  /** Largest token id + 1 (base vocabulary and added tokens). */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
}

type TokenizerJson = {
  model?: { vocab?: Record<string, number> | [string, number][] };
  added_tokens?: { id: number; content: string }[];
};

function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'content' in value)
    return String((value as { content: unknown }).content);
  return undefined;
}

/** Reads vocabulary size and special-token ids from `dir/tokenizer.json` (+ tokenizer_config.json). */
export function readTokenizerFacts(dir: string): TokenizerFacts {
  const file = join(dir, 'tokenizer.json');
  if (!existsSync(file)) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `no tokenizer.json in ${dir}; pass --tokenizer DIR pointing at a Hugging Face tokenizer folder`,
    );
  }
  const tok = JSON.parse(readFileSync(file, 'utf8')) as TokenizerJson;
  const ids = new Map<string, number>();
  const vocab = tok.model?.vocab ?? {};
  const entries: [string, number][] = Array.isArray(vocab)
    ? vocab.map(([t], i) => [t, i])
    : Object.entries(vocab);
  for (const [t, id] of entries) ids.set(t, id);
  for (const a of tok.added_tokens ?? []) ids.set(a.content, a.id);
  let vocabSize = 0;
  for (const id of ids.values()) vocabSize = Math.max(vocabSize, id + 1);
  const cfgFile = join(dir, 'tokenizer_config.json');
  const cfg = existsSync(cfgFile)
    ? (JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, unknown>)
    : {};
  const idOf = (key: string) => {
    const text = tokenText(cfg[key]);
    return text === undefined ? null : (ids.get(text) ?? null);
  };
  return {
    vocabSize,
    bosTokenId: idOf('bos_token'),
    eosTokenId: idOf('eos_token'),
    padTokenId: idOf('pad_token'),
  };
}

/** Copies the tokenizer files that exist in `from` into `to`. */
export function copyTokenizerFiles(from: string, to: string): string[] {
  const copied: string[] = [];
  for (const name of TOKENIZER_FILES) {
    if (existsSync(join(from, name))) {
      copyFileSync(join(from, name), join(to, name));
      copied.push(name);
    }
  }
  return copied;
}
