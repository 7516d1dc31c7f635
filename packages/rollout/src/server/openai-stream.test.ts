import { describe, expect, it } from 'vitest';
import { TextDeltas } from './openai-stream.js';

// ids are indexes into these pieces; decode joins them (a byte-level tokenizer's partial
// characters decode as U+FFFD until the character is complete)
const pieces = ['Hel', 'lo', ' <', '/c', 'alc> rest', '\uFFFD', 'é'];
const decode = (ids: readonly number[]) => {
  const text = ids.map((i) => pieces[i]).join('');
  return text.replace('\uFFFDé', 'é'); // 'é' completes the pending character
};

describe('TextDeltas', () => {
  it('sends text as it grows, holding back a possible stop string start until it resolves', () => {
    const d = new TextDeltas(decode, ['</calc>']);
    expect(d.next([0])).toBe('Hel');
    expect(d.next([0, 1])).toBe('lo');
    expect(d.next([0, 1, 2])).toBe(' '); // '<' may start '</calc>'
    expect(d.next([0, 1, 2, 3])).toBe(''); // '</c' still may
    expect(d.next([0, 1, 2, 3, 4])).toBe(''); // the stop string completed: nothing past it
    expect(d.finish('Hello ')).toBe(''); // the answer is cut before the stop string
  });

  it('sends held-back text once it cannot be a stop string, and waits for whole characters', () => {
    const d = new TextDeltas(decode, ['<x>']);
    expect(d.next([0, 1, 2])).toBe('Hello ');
    expect(d.next([0, 1, 2, 3])).toBe('</c');
    expect(d.next([0, 1, 2, 3, 5])).toBe('');
    expect(d.next([0, 1, 2, 3, 5, 6])).toBe('é');
    expect(d.finish('Hello </cé')).toBe('');
  });
});
