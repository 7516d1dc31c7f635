import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { writeCharTokenizer } from './char-tokenizer.js';
import { loadTokenizer } from './load-tokenizer.js';

describe('writeCharTokenizer', () => {
  it('writes a folder loadTokenizer reads: specials 0-2, then one id per character', async () => {
    const dir = join(tempDir('rl2-char-tok-'), 'tokenizer');
    expect(writeCharTokenizer(dir, [...'0123+= '])).toBe(10);
    const tok = await loadTokenizer(dir);
    expect(tok.encode('12+3')).toEqual([4, 5, 7, 6]);
    expect(tok.decode([4, 5, 7, 6, 2], { skipSpecialTokens: true })).toBe('12+3');
    expect(tok.tokenToId('<|im_end|>')).toBe(2);
    expect(tok.eosTokenId).toBe(2);
    expect(tok.padTokenId).toBe(0);
  });

  it('adds the given tokenizer_config.json keys, such as a chat template', async () => {
    const dir = tempDir('rl2-char-tok-');
    const chat_template =
      "{% for m in messages %}{{ '<|im_start|>' + m['content'] + '<|im_end|>' }}{% endfor %}";
    writeCharTokenizer(dir, [...'ab'], { chat_template, model_max_length: 8 });
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
    expect(config.model_max_length).toBe(8);
    const tok = await loadTokenizer(dir);
    expect(tok.applyChatTemplate([{ role: 'user', content: 'ab' }])).toBe(
      '<|im_start|>ab<|im_end|>',
    );
  });
});
