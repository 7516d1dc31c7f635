import { describe, expect, it } from 'vitest';
import { lastBoxedInteger, step } from './guess-number-env.js';

describe('guess the number', () => {
  it('says higher or lower in a user turn that extends the same sequence', async () => {
    const state = '<|im_start|>user\nGuess 1..16<|im_end|>\n<|im_start|>assistant\n';
    const action = 'Maybe \\boxed{4}<|im_end|>';
    const [next, reward, done] = await step(state, action, 11);
    expect([reward, done]).toEqual([0, false]);
    expect(next).toBe(
      `${state}${action}\n<|im_start|>user\n4 is wrong: the number is higher. Guess again.<|im_end|>\n<|im_start|>assistant\n`,
    );
    const [, , again] = await step(next ?? '', '\\boxed{13}<|im_end|>', 11);
    expect(again).toBe(false);
    expect((await step(next ?? '', '\\boxed{13}', 11))[0]).toMatch(
      /13 is wrong: the number is lower/,
    );
  });

  it('ends with reward 1 on the right guess, and explains the format after a turn without one', async () => {
    expect(await step('s', 'it is \\boxed{3} no \\boxed{11}', '11')).toEqual([null, 1, true]);
    const [next, reward, done] = await step('s', 'eleven', 11);
    expect([reward, done]).toEqual([0, false]);
    expect(next).toBe('seleven\nGive one whole number as \\boxed{N}, e.g. \\boxed{8}.\n');
  });

  it('reads the last boxed integer only', () => {
    expect(lastBoxedInteger('\\boxed{ -2 } then \\boxed{7}')).toBe(7);
    expect(lastBoxedInteger('\\boxed{x}')).toBeNull();
  });
});
