import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Tokenizer, loadTokenizer } from '@rl2/data';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadItems, toItems } from './load-items.js';

let tok: Tokenizer;
const split = {
  path: 'x',
  prompt_key: 'prompt',
  response_key: 'response',
  messages_key: 'messages',
  chosen_key: 'chosen',
  rejected_key: 'rejected',
  apply_chat_template: false,
  max_length: null,
};
const one = (row: Record<string, unknown>) => ({
  rows: [row],
  origins: [{ file: 'f.jsonl', row: 1 }],
});
const text = (ids: readonly number[]) => tok.decode(ids);

beforeAll(async () => {
  tok = await loadTokenizer(resolve(import.meta.dirname, '../../test/fixtures/char-tokenizer'));
});

describe('toItems', () => {
  it('SFT raw text: prompt masked, response + EOS trained, shifted by one', () => {
    const { items } = toItems('sft', tok, one({ prompt: '1+2=', response: '3' }), split);
    const q = items[0].sequences[0];
    expect(text(q.inputIds)).toBe('1+2=3');
    expect(text(q.targets)).toBe('+2=3<|im_end|>');
    expect(q.lossMask).toEqual([0, 0, 0, 1, 1]); // predicting "3" and EOS
    expect(items[0].origin).toBe('f.jsonl row 1');
  });

  it('SFT raw text with apply_chat_template renders the prompt as a user turn', () => {
    const { items } = toItems('sft', tok, one({ prompt: '1+2=', response: '3' }), {
      ...split,
      apply_chat_template: true,
    });
    const q = items[0].sequences[0];
    expect(text(q.inputIds)).toBe('<|im_start|>user\n1+2=<|im_end|>\n<|im_start|>assistant\n3');
    expect(q.lossMask.reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('SFT messages train every assistant turn; max_length truncates', () => {
    const messages = [
      { role: 'user', content: '1+1=' },
      { role: 'assistant', content: '2' },
      { role: 'user', content: '2+2=' },
      { role: 'assistant', content: '4' },
    ];
    const { items } = toItems('sft', tok, one({ messages }), split);
    const q = items[0].sequences[0];
    const trained = q.targets.filter((_, t) => q.lossMask[t] === 1);
    expect(text(trained)).toBe('2<|im_end|>\n4<|im_end|>\n');
    const cut = toItems('sft', tok, one({ messages }), { ...split, max_length: 25 }).items[0]
      .sequences[0];
    expect(cut.inputIds.length).toBe(25);
    expect(text(cut.targets.filter((_, t) => cut.lossMask[t] === 1))).toBe('2<|im_end|>\n');
    // cut before the first reply: nothing to train on, the row is dropped and counted
    expect(toItems('sft', tok, one({ messages }), { ...split, max_length: 10 })).toEqual({
      items: [],
      dropped: 1,
      truncated: 1,
      droppedLong: 0,
    });
  });

  it('RM pairs: two unshifted sequences, the loss mask on the last token only', () => {
    const { items } = toItems(
      'rm',
      tok,
      one({ prompt: '1+2=', chosen: '3', rejected: '4' }),
      split,
    );
    const [c, r] = items[0].sequences;
    expect(text(c.inputIds)).toBe('1+2=3<|im_end|>');
    expect(text(r.inputIds)).toBe('1+2=4<|im_end|>');
    expect(c.lossMask).toEqual([0, 0, 0, 0, 0, 1]);
  });

  it('DPO pairs: shifted, the reply trained; a reply truncated away is an error naming the row', () => {
    const row = { messages: [{ role: 'user', content: '1+2=' }], chosen: '3', rejected: '4' };
    const [c] = toItems('dpo', tok, one(row), split).items[0].sequences;
    expect(text(c.targets.filter((_, t) => c.lossMask[t] === 1))).toBe('3<|im_end|>\n');
    expect(() => toItems('dpo', tok, one(row), { ...split, max_length: 5 })).toThrow(
      /f\.jsonl row 1.*max_length/,
    );
  });

  it('a row of the wrong shape names the file, row and expected keys', () => {
    expect(() => toItems('dpo', tok, one({ prompt: '1+2=', chosen: '3' }), split)).toThrow(
      /f\.jsonl row 1.*rejected/,
    );
  });
});

describe('loadItems', () => {
  it('splits test_ratio off train with the seed when there is no test path', async () => {
    const dir = tempDir('rl2-items-');
    const file = join(dir, 'train.jsonl');
    writeFileSync(
      file,
      Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ prompt: `${i}+1=`, response: String(i + 1) }),
      ).join('\n'),
    );
    const data = {
      train: { ...split, path: file },
      test: { ...split, path: null },
      test_ratio: 0.1,
    };
    const a = await loadItems('sft', tok, data, 7);
    expect([a.train.length, a.test.length]).toEqual([36, 4]);
    const b = await loadItems('sft', tok, data, 7);
    expect(b.test.map((it) => it.origin)).toEqual(a.test.map((it) => it.origin));
    await expect(
      loadItems('sft', tok, { ...data, train: { ...split, path: join(dir, 'absent.jsonl') } }, 7),
    ).rejects.toThrow(/data\.train\.path=/);
  });
});

describe('sequence lengths, checked when the data is tokenized', () => {
  const rows = (n: number) => ({
    rows: Array.from({ length: n }, (_, i) => ({
      prompt: '1+2=',
      response: '3'.repeat(i * 4 + 1),
    })),
    origins: Array.from({ length: n }, (_, i) => ({ file: 'f.jsonl', row: i + 1 })),
  });

  it('max_length truncates (counted) or, with over_max_length=drop, drops the row (counted); RM reads the reward at the new last token', () => {
    const cut = toItems('sft', tok, rows(4), { ...split, max_length: 8 });
    expect(cut.items.map((it) => it.sequences[0].inputIds.length)).toEqual([5, 8, 8, 8]);
    expect([cut.truncated, cut.droppedLong]).toEqual([3, 0]);
    const dropped = toItems('sft', tok, rows(4), {
      ...split,
      max_length: 8,
      over_max_length: 'drop',
    });
    expect(dropped.items.map((it) => it.origin)).toEqual(['f.jsonl row 1']);
    expect([dropped.truncated, dropped.droppedLong]).toEqual([0, 3]);
    const [c] = toItems('rm', tok, one({ prompt: '1+2=', chosen: '345', rejected: '4' }), {
      ...split,
      max_length: 5,
    }).items[0].sequences;
    expect(c.lossMask).toEqual([0, 0, 0, 0, 1]);
  });

  it('a row over the micro-batch budget is an error naming file, row, length and the keys, before any step', async () => {
    const dir = tempDir('rl2-long-');
    const file = join(dir, 'train.jsonl');
    writeFileSync(
      file,
      `${rows(6)
        .rows.map((r) => JSON.stringify(r))
        .join('\n')}\n`,
    );
    const data = { train: { ...split, path: file }, test: { ...split, path: file }, test_ratio: 0 };
    const fit = { budget: 16, budgetKey: 'actor.max_length_per_device' };
    await expect(loadItems('sft', tok, data, 0, fit)).rejects.toThrow(
      `${file} row 4 (data.train.path): a sequence has 17 tokens, more than ` +
        `actor.max_length_per_device=16 holds. Raise actor.max_length_per_device, or set ` +
        `data.train.max_length=16 to truncate such rows (add data.train.over_max_length=drop to ` +
        `drop them instead).`,
    );
    const pairs = join(dir, 'pairs.jsonl');
    writeFileSync(
      pairs,
      `${JSON.stringify({ prompt: '1+2=', chosen: '333333333', rejected: '4' })}\n`,
    );
    await expect(
      loadItems(
        'dpo',
        tok,
        { ...data, train: { ...split, path: pairs }, test: { ...split, path: pairs } },
        0,
        fit,
      ),
    ).rejects.toThrow(
      new RegExp(
        String.raw`pairs\.jsonl row 1 \(data\.train\.path\): its chosen \+ rejected pair has 18 ` +
          String.raw`tokens \(packed together\), more than actor\.max_length_per_device=16 holds\. ` +
          String.raw`.*data\.train\.max_length=8`,
      ),
    );
    const fits = await loadItems(
      'sft',
      tok,
      {
        ...data,
        train: { ...data.train, max_length: 16 },
        test: { ...data.test, max_length: 16, over_max_length: 'drop' },
      },
      0,
      fit,
    );
    expect([
      fits.train.length,
      fits.counts.train.truncatedRows,
      fits.test.length,
      fits.counts.test.longRowsDropped,
    ]).toEqual([6, 3, 3, 3]);
  });

  it('a huge row is dropped (over_max_length=drop), clipped (truncate) or refused (budget) before it is tokenized', async () => {
    // tokenizing a 50 MB row took minutes and gigabytes before its length was checked (issue 26)
    let encoded = 0;
    const spy: Tokenizer = Object.assign(Object.create(tok) as Tokenizer, {
      encode: (t: string, o?: { addSpecialTokens?: boolean }) => {
        encoded += t.length;
        return tok.encode(t, o);
      },
    });
    const huge = {
      rows: [
        { prompt: '1+2=', response: '3' },
        { prompt: '1+2=', response: '3'.repeat(5_000_000) },
      ],
      origins: [1, 2].map((row) => ({ file: 'f.jsonl', row })),
    };
    const dropped = toItems('sft', spy, huge, { ...split, max_length: 8, over_max_length: 'drop' });
    expect([dropped.items.length, dropped.droppedLong]).toEqual([1, 1]);
    expect(encoded).toBeLessThan(1000);
    const fit = { budget: 16, budgetKey: 'actor.max_length_per_device', split: 'data.train' };
    const message = new RegExp(
      String.raw`^f\.jsonl row 2 \(data\.train\.path\): a text of 5000000 characters is at least \d+ ` +
        String.raw`tokens, more than actor\.max_length_per_device=16 holds \(found before tokenizing\)\. ` +
        String.raw`Raise actor\.max_length_per_device, or set data\.train\.max_length=16 with ` +
        String.raw`data\.train\.over_max_length=drop`,
    );
    expect(() => toItems('sft', spy, huge, split, fit)).toThrow(message);
    expect(encoded).toBeLessThan(1000);
    // truncation (the default) tokenizes only a clipped copy, and keeps the same first tokens
    const cut = toItems('sft', spy, huge, { ...split, max_length: 8 });
    expect(encoded).toBeLessThan(1000);
    // against the untruncated tokens of a shorter such row (no max_length: no clipping), cut at 8
    const whole = toItems('sft', tok, one({ prompt: '1+2=', response: '3'.repeat(2000) }), split)
      .items[0]?.sequences[0];
    const kept = cut.items[1]?.sequences[0];
    expect([cut.items.length, cut.truncated]).toEqual([2, 1]);
    expect(kept?.inputIds).toEqual(whole?.inputIds.slice(0, 8));
    expect(kept?.targets).toEqual(whole?.targets.slice(0, 8));
    expect(kept?.lossMask).toEqual(whole?.lossMask.slice(0, 8));
    const pairs = one({ prompt: '1+2=', chosen: '3'.repeat(1_000_000), rejected: '4' });
    expect(
      toItems('dpo', spy, pairs, { ...split, max_length: 8, over_max_length: 'drop' }).droppedLong,
    ).toBe(1);
    expect(encoded).toBeLessThan(1000);
  });

  it('a malformed row names data.on_bad_row; with it set to skip the row is counted', async () => {
    const dir = tempDir('rl2-bad-');
    const file = join(dir, 'train.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ prompt: '1+2=', response: '3' })}\n{"prompt": \n${JSON.stringify({ prompt: '2+2=', response: '4' })}\n`,
    );
    const data = { train: { ...split, path: file }, test: { ...split, path: file }, test_ratio: 0 };
    await expect(loadItems('sft', tok, data, 0)).rejects.toThrow(
      /train\.jsonl line 2 is not valid JSON Lines .*Fix or remove that line\. Or set data\.on_bad_row=skip to count and skip such rows\.$/,
    );
    const skipped = await loadItems('sft', tok, { ...data, on_bad_row: 'skip' }, 0);
    expect([
      skipped.train.length,
      skipped.counts.train.malformedRows,
      skipped.counts.test.malformedRows,
    ]).toEqual([2, 1, 1]);
  });
});
