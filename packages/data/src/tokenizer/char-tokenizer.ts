import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Ids 0-2 of a character tokenizer: pad, ChatML's turn start, and eos (Qwen's names). */
const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];

/** An added token as tokenizer_config.json's added_tokens_decoder lists it. */
const special = (content: string) => ({
  content,
  lstrip: false,
  normalized: false,
  rstrip: false,
  single_word: false,
  special: true,
});

/**
 * Writes a character-level tokenizer into `dir`: tokenizer.json and tokenizer_config.json as HF's
 * PreTrainedTokenizerFast reads them. Ids 0-2 are `<|endoftext|>` (pad), `<|im_start|>` and
 * `<|im_end|>` (eos), then one id per character of `chars`, in order (a BPE without merges).
 * `config` adds tokenizer_config.json keys (`chat_template`, `model_max_length`, ...). For tiny
 * models, examples and tests; returns the vocabulary size.
 */
export function writeCharTokenizer(
  dir: string,
  chars: readonly string[],
  config: Record<string, unknown> = {},
): number {
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: 'Split',
      pattern: { Regex: '[\\s\\S]' },
      behavior: 'Isolated',
      invert: false,
    },
    post_processor: null,
    decoder: { type: 'Fuse' },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      vocab: Object.fromEntries(chars.map((c, i) => [c, SPECIALS.length + i])),
      merges: [],
    },
  };
  const tokenizerConfig = {
    added_tokens_decoder: Object.fromEntries(SPECIALS.map((content, id) => [id, special(content)])),
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    tokenizer_class: 'PreTrainedTokenizerFast',
    ...config,
  };
  mkdirSync(dir, { recursive: true });
  const json = (value: unknown) => `${JSON.stringify(value, null, 1)}\n`;
  writeFileSync(join(dir, 'tokenizer.json'), json(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), json(tokenizerConfig));
  return SPECIALS.length + chars.length;
}
