import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { charTokenizer, scriptedEngine } from '../../test/scripted-engine.js';
import { loadEnvironment } from '../env/load-environment.js';
import { runTrajectory } from '../trajectory/run-trajectory.js';
import { extractAnswer } from './arithmetic-env.js';
import { evaluateExpression } from './evaluate-expression.js';

describe('evaluateExpression', () => {
  it('follows precedence, associativity, unary minus and parentheses', () => {
    expect(evaluateExpression('2+3*4')).toBe(14);
    expect(evaluateExpression('(2+3)*4')).toBe(20);
    expect(evaluateExpression('10-4-3')).toBe(3);
    expect(evaluateExpression('48/4/2')).toBe(6);
    expect(evaluateExpression('-3*-(2+1)')).toBe(9);
    expect(evaluateExpression(' 1.5 * 4 ')).toBe(6);
  });
  it('agrees with the JavaScript engine on random expressions', () => {
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const gen = (depth: number): string => {
      if (depth === 0 || rnd(3) === 0) return String(rnd(50) + 1);
      const op = ['+', '-', '*', '/'][rnd(4)];
      const e = `${gen(depth - 1)}${op}${gen(depth - 1)}`;
      return rnd(2) ? `(${e})` : e;
    };
    for (let i = 0; i < 200; i += 1) {
      const e = gen(4);
      expect(evaluateExpression(e)).toBeCloseTo(new Function(`return ${e}`)() as number, 9);
    }
  });
  it('names the bad character and refuses code', () => {
    expect(() => evaluateExpression('2+')).toThrow(/expected a number at character 3/);
    expect(() => evaluateExpression('process.exit()')).toThrow(/character 1/);
    expect(() => evaluateExpression('(1+2')).toThrow(/expected "\)"/);
    expect(() => evaluateExpression('1/0')).toThrow(/not finite/);
  });
});

describe('example envs loaded by path', () => {
  it('calculator: a tool call merges into one sequence with the result tokens masked', async () => {
    const env = await loadEnvironment(join(import.meta.dirname, 'calculator-env.ts'));
    const engine = scriptedEngine((text) =>
      text.includes('<result>') ? '<answer>84</answer>' : '<calc>12*(3+4)</calc>',
    );
    const t = await runTrajectory(
      { prompt: 'Q: 12*(3+4)?\n', answer: 84 },
      { promptId: 0, sampleId: 0 },
      {
        engine,
        env,
        tokenizer: charTokenizer,
        sampling: {},
        maxTurns: 4,
      },
    );
    expect(t.error).toBeUndefined();
    expect(t.sequences).toHaveLength(1);
    const s = t.sequences[0];
    const text = charTokenizer.decode(s.tokenIds);
    expect(text).toBe(
      'Q: 12*(3+4)?\n<calc>12*(3+4)</calc>\n<result>84</result>\n<answer>84</answer>',
    );
    const masked = (from: string) => {
      const i = text.indexOf(from);
      return s.actionMask.slice(i, i + from.length);
    };
    expect(masked('<calc>12*(3+4)</calc>').every((m) => m === 1)).toBe(true);
    expect(masked('\n<result>84</result>\n').every((m) => m === 0)).toBe(true);
    expect(masked('<answer>84</answer>').every((m) => m === 1)).toBe(true);
    expect(s.rewards.reduce((a, b) => a + b, 0)).toBe(1);
    expect(s.rewards[s.rewards.length - 1]).toBe(1);
    expect(t.turns.map((x) => x.next)).toEqual(['merge', 'done']);
  });

  it('calculator: a bad expression returns an error result, no tag ends with 0', async () => {
    const env = await loadEnvironment(join(import.meta.dirname, 'calculator-env.ts'));
    const bad = await env.step('S', '<calc>2+</calc>', 1);
    expect(bad.nextState).toMatch(/^S<calc>2\+<\/calc>\n<result>error: cannot evaluate/);
    expect(await env.step('S', 'I give up', 1)).toEqual({ nextState: null, reward: 0, done: true });
  });

  it('arithmetic: rewards the tagged or last number', async () => {
    const env = await loadEnvironment(join(import.meta.dirname, 'arithmetic-env.ts'));
    expect((await env.step('', '3+4 = 7', '7')).reward).toBe(1);
    expect((await env.step('', 'it is 7, no 8', 7)).reward).toBe(0);
    expect((await env.step('', '<answer>-2</answer> or 5', -2)).reward).toBe(1);
    expect((await env.step('', 'no idea', 0)).reward).toBe(0);
    expect(extractAnswer('x 1.5 y')).toBe(1.5);
  });
});
