// The tokenizer.ggml.* keys of a Qwen3 GGUF from its tokenizer.json, as convert_hf_to_gguf.py's
// get_vocab_base writes them: one entry per row of the embedding (vocab_size), ids the tokenizer
// lacks as "[PADn]" (UNUSED), added special tokens and <|...|> ones CONTROL, other added
// tokens USER_DEFINED, the rest NORMAL; merges as "a b"; the gpt2 model with qwen2 pre-tokenizer.
import { readFileSync } from 'node:fs';
import { type MetaValue, meta } from './gguf-file.js';

/** gguf-py TokenType. */
export const TokenType = { NORMAL: 1, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5 } as const;

interface TokenizerJson {
  model: { type: string; vocab: Record<string, number>; merges: (string | [string, string])[] };
  added_tokens: { id: number; content: string; special: boolean }[];
}

const looksSpecial = (t: string) => t.startsWith('<|') && t.endsWith('|>');

export function tokenizerMetadata(
  path: string,
  config: Record<string, unknown>,
): Map<string, MetaValue> {
  const tok = JSON.parse(readFileSync(path, 'utf8')) as TokenizerJson;
  if (tok.model.type !== 'BPE')
    throw new Error(`${path}: model.type is ${tok.model.type}; a Qwen3 GGUF needs a BPE tokenizer`);
  const vocabSize = config.vocab_size as number;
  const tokens: string[] = Array.from({ length: vocabSize }, (_, i) => `[PAD${i}]`);
  const types: number[] = new Array(vocabSize).fill(TokenType.UNUSED);
  const place = (text: string, id: number, type: number) => {
    if (id >= vocabSize)
      throw new Error(
        `${path}: token ${JSON.stringify(text)} has id ${id} >= config.json vocab_size ${vocabSize}`,
      );
    tokens[id] = text;
    types[id] = type;
  };
  for (const [text, id] of Object.entries(tok.model.vocab)) place(text, id, TokenType.NORMAL);
  for (const a of tok.added_tokens)
    place(
      a.content,
      a.id,
      a.special || looksSpecial(a.content) ? TokenType.CONTROL : TokenType.USER_DEFINED,
    );
  const merges = tok.model.merges.map((m) => (typeof m === 'string' ? m : m.join(' ')));
  const id = (key: string, fallback: number) => {
    const v = config[key];
    return typeof v === 'number'
      ? v
      : Array.isArray(v) && typeof v[0] === 'number'
        ? v[0]
        : fallback;
  };
  const bos = id('bos_token_id', 151643);
  return new Map<string, MetaValue>([
    ['tokenizer.ggml.model', meta.str('gpt2')],
    ['tokenizer.ggml.pre', meta.str('qwen2')],
    ['tokenizer.ggml.tokens', meta.strings(tokens)],
    ['tokenizer.ggml.token_type', meta.i32s(types)],
    ['tokenizer.ggml.merges', meta.strings(merges)],
    ['tokenizer.ggml.bos_token_id', meta.u32(bos)],
    ['tokenizer.ggml.eos_token_id', meta.u32(id('eos_token_id', 151645))],
    ['tokenizer.ggml.padding_token_id', meta.u32(id('pad_token_id', bos))],
    ['tokenizer.ggml.add_bos_token', meta.bool(false)],
  ]);
}
