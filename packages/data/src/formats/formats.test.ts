import { describe, expect, it } from 'vitest';
import { DataError } from '../errors.js';
import { toPairExample } from './pair-example.js';
import { toPpoExample } from './ppo-example.js';
import { toSftExample } from './sft-example.js';

const origin = { file: 'train.jsonl', row: 7 };

describe('toSftExample', () => {
  it('reads prompt/response and messages forms', () => {
    expect(toSftExample({ prompt: 'p', response: 'r' })).toEqual({
      kind: 'text',
      prompt: 'p',
      response: 'r',
    });
    const messages = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
    ];
    expect(toSftExample({ messages })).toEqual({ kind: 'messages', messages });
  });
  it('honours configured keys', () => {
    expect(toSftExample({ q: 'p', a: 'r' }, { promptKey: 'q', responseKey: 'a' })).toEqual({
      kind: 'text',
      prompt: 'p',
      response: 'r',
    });
  });
  it('names the missing key, the row and the expected format', () => {
    const e = (() => {
      try {
        toSftExample({ prompt: 'p', answer: 'x' }, {}, { origin });
      } catch (x) {
        return x as DataError;
      }
    })();
    expect(e).toBeInstanceOf(DataError);
    expect(e?.code).toBe('MISSING_KEY');
    expect(e?.message).toContain('train.jsonl row 7 has no key "response"');
    expect(e?.message).toContain('SFT expects {prompt, response} or {messages}');
    expect(e?.message).toContain('its keys: prompt, answer');
  });
  it('a null value (a Parquet null) is named as null, not as a missing key', () => {
    const e = (() => {
      try {
        toSftExample({ prompt: 'p', response: null }, {}, { origin });
      } catch (x) {
        return x as DataError;
      }
    })();
    expect(e?.code).toBe('MISSING_KEY');
    expect(e?.message).toContain('train.jsonl row 7: key "response" is null');
    expect(e?.message).not.toContain('has no key');
  });
  it('rejects wrong types with WRONG_TYPE', () => {
    expect(() => toSftExample({ messages: 'hi' }, {}, { origin })).toThrowError(
      /"messages" must be a list/,
    );
    expect(() =>
      toSftExample({ messages: [{ role: 'user', content: 3 }] }, {}, { origin }),
    ).toThrowError(/messages\[0\]/);
    expect(() => toSftExample({ prompt: 1, response: 'r' }, {}, { origin })).toThrowError(
      /"prompt" must be a string, got number 1/,
    );
  });
});

describe('toPairExample', () => {
  it('reads text pairs', () => {
    expect(toPairExample({ prompt: 'p', chosen: 'c', rejected: 'r' })).toEqual({
      kind: 'text',
      prompt: 'p',
      chosen: 'c',
      rejected: 'r',
    });
  });
  it('turns string replies after messages into assistant turns, and accepts full message lists', () => {
    const messages = [{ role: 'user', content: 'q' }];
    const ex = toPairExample({
      messages,
      chosen: 'good',
      rejected: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'bad' },
      ],
    });
    expect(ex).toEqual({
      kind: 'messages',
      chosen: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'good' },
      ],
      rejected: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'bad' },
      ],
    });
  });
  it('names the trainer and key when rejected is missing', () => {
    expect(() =>
      toPairExample({ prompt: 'p', chosen: 'c' }, {}, { origin, trainer: 'DPO' }),
    ).toThrowError(/no key "rejected".*DPO expects \{prompt, chosen, rejected\}/);
  });
});

describe('toPairExample without a prompt', () => {
  it('reads chosen and rejected as two full conversations (RL2 HEAD, Skywork form)', () => {
    const chosen = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'good' },
    ];
    const rejected = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'bad' },
    ];
    expect(toPairExample({ chosen, rejected })).toEqual({ kind: 'messages', chosen, rejected });
  });
  it('still asks for the prompt when chosen or rejected is a string', () => {
    expect(() =>
      toPairExample({ chosen: [{ role: 'user', content: 'q' }], rejected: 'r' }),
    ).toThrowError(/no key "prompt"/);
  });
});

describe('toPpoExample', () => {
  it('keeps the whole row and any answer type', () => {
    const row = { prompt: 'p', answer: { x: 1 }, extra: [1, 2] };
    expect(toPpoExample(row)).toEqual({ kind: 'text', prompt: 'p', answer: { x: 1 }, row });
  });
  it('requires the answer unless told not to', () => {
    expect(() => toPpoExample({ prompt: 'p' }, {}, { origin })).toThrowError(
      /no key "answer".*PPO expects/,
    );
    expect(toPpoExample({ prompt: 'p' }, {}, { requireAnswer: false }).answer).toBeUndefined();
  });
});
