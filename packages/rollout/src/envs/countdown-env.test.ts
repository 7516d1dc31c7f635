import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEnvironment } from '../env/load-environment.js';
import { countdownReward } from './countdown-env.js';

// Expected values follow RL2's envs/countdown.py line by line: no tag 0; a tag 0.1; the
// right numbers (as a multiset), legal characters and the target within 1e-5: 1.
describe('countdown env (RL2 envs/countdown.py)', () => {
  const p = { numbers: [3, 7, 12], target: 33 };
  it('gives 1 for a correct equation, in any order, with spaces and parentheses', () => {
    expect(countdownReward('<answer>3*7+12</answer>', p)).toBe(1);
    expect(countdownReward('think... <answer> 12 + (7 * 3) </answer><|im_end|>', p)).toBe(1);
    expect(
      countdownReward('<answer>(12/3+7)*3</answer>', { numbers: [12, 3, 7, 3], target: 33 }),
    ).toBe(1);
    expect(
      countdownReward('<answer>7/3*12-(-5)</answer>', { numbers: [7, 3, 12, 5], target: 33 }),
    ).toBe(1);
  });
  it('gives 0.1 for a well-formed answer that is wrong, uses other numbers, or does not parse', () => {
    expect(countdownReward('<answer>3+7+12</answer>', p)).toBe(0.1); // 22, not 33
    expect(countdownReward('<answer>3*7+12+0</answer>', p)).toBe(0.1); // an extra number
    expect(countdownReward('<answer>3*11</answer>', p)).toBe(0.1); // other numbers
    expect(countdownReward('<answer>3*7+12+7-7</answer>', p)).toBe(0.1); // 7 used three times
    expect(countdownReward('<answer>33</answer>', p)).toBe(0.1);
    expect(countdownReward('<answer>3*7+12=33</answer>', p)).toBe(0.1); // "=" and 33 are not allowed
    expect(countdownReward('<answer>3*(7+12</answer>', p)).toBe(0.1); // does not parse
    expect(countdownReward('<answer>x3*7+12</answer>', p)).toBe(0.1); // illegal character
    expect(countdownReward('<answer></answer>', p)).toBe(0.1);
    // Python's eval raises on these, so RL2 keeps 0.1 although 3*7+12 = 33 once read:
    expect(countdownReward('<answer>3*07+12</answer>', { numbers: [3, 7, 12], target: 33 })).toBe(
      0.1,
    );
    expect(countdownReward('<answer>3*7+1 2</answer>', { numbers: [3, 7, 1, 2], target: 33 })).toBe(
      0.1,
    );
    // ...while 12.0 is a float for Python's eval and the numbers 12 and 0 for RL2's check:
    expect(
      countdownReward('<answer>3*7+12.0</answer>', { numbers: [3, 7, 12, 0], target: 33 }),
    ).toBe(1);
    expect(
      countdownReward('<answer>12/(7-7)*3</answer>', { numbers: [12, 7, 7, 3], target: 33 }),
    ).toBe(0.1); // division by 0
  });
  it('gives 0 without a closed <answer> tag', () => {
    expect(countdownReward('3*7+12', p)).toBe(0);
    expect(countdownReward('<answer>3*7+12', p)).toBe(0);
    expect(countdownReward('', p)).toBe(0);
    expect(countdownReward('<answer>3*7\n+12</answer>', p)).toBe(0); // Python's `.` stops at a newline
    expect(countdownReward('<answer>\n3*7+12</answer>', p)).toBe(0);
  });
  it('reads the first <answer> only, and accepts the problem as a JSON string', async () => {
    expect(countdownReward('<answer>3+7+12</answer> <answer>3*7+12</answer>', p)).toBe(0.1);
    const env = await loadEnvironment(join(import.meta.dirname, 'countdown-env.ts'));
    expect((await env.step('', '<answer>3*7+12</answer>', JSON.stringify(p))).reward).toBe(1);
    expect((await env.step('', '<answer>3*7+12</answer>', p)).reward).toBe(1);
    await expect(env.step('', '<answer>1</answer>', 33)).rejects.toThrow(/answer_key/);
  });
});
