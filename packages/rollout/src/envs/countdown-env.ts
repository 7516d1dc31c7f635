/**
 * RL2's Countdown env (envs/countdown.py in github.com/ChenmienTan/RL2, the TinyZero task):
 * combine the given numbers with + - * / and parentheses to reach the target. The answer is
 * the problem, `{numbers, target}` (a JSON string of it is accepted too). Reward, as RL2's:
 * - 0 when the response has no `<answer>...</answer>` on one line;
 * - 0.1 for a well-formed `<answer>` (whatever it holds);
 * - 1 when the equation in it uses exactly the given numbers, each once (as multisets), holds
 *   only digits, `+ - * / ( ) .` and spaces, and evaluates to the target (within 1e-5).
 * The equation is parsed by `evaluateExpression` (no `eval`). Where Python's eval would raise,
 * the reward stays 0.1 here too: digits split by spaces (`1 2`) and integer literals with a
 * leading zero (`07`). Unlike Python's eval it does not read `**`, `//`, unary `+` or `3.`:
 * such answers keep 0.1.
 */
import { RolloutError } from '../errors.js';
import { evaluateExpression } from './evaluate-expression.js';

/** One Countdown problem, as RL2's and TinyZero's datasets hold it. */
export interface CountdownProblem {
  numbers: number[];
  target: number;
}

// As Python's re without DOTALL: the first <answer>...</answer> on one line.
const answerTag = /<answer>([^\n]*?)<\/answer>/;
const equationChars = /^[\d+\-*/().\s]+$/;

export async function step(
  _state: string,
  action: string,
  answer: unknown,
): Promise<[null, number, true]> {
  return [null, countdownReward(action, toProblem(answer)), true];
}

/** RL2's countdown reward of one response: 0, 0.1 (well-formed answer) or 1 (correct equation). */
export function countdownReward(response: string, problem: CountdownProblem): number {
  const match = answerTag.exec(response);
  if (!match) return 0;
  const equation = (match[1] as string).trim();
  const used = (equation.match(/\d+/g) ?? []).map(Number);
  if (!sameMultiset(used, problem.numbers) || !equationChars.test(equation)) return 0.1;
  if (/\d\s+\d/.test(equation) || /(^|[^\d.])0\d/.test(equation)) return 0.1; // SyntaxError in Python
  let value: number;
  try {
    value = evaluateExpression(equation);
  } catch {
    return 0.1;
  }
  return Math.abs(value - problem.target) < 1e-5 ? 1 : 0.1;
}

function sameMultiset(a: number[], b: number[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort((p, q) => p - q);
  const y = [...b].sort((p, q) => p - q);
  return x.every((v, i) => v === y[i]);
}

function toProblem(answer: unknown): CountdownProblem {
  const value = typeof answer === 'string' ? (JSON.parse(answer) as unknown) : answer;
  const p = value as Partial<CountdownProblem> | null;
  if (!p || !Array.isArray(p.numbers) || typeof p.target !== 'number') {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      'countdown env: the answer must be {numbers: number[], target: number} (set data.train.answer_key to the column holding it)',
    );
  }
  return { numbers: p.numbers.map(Number), target: p.target };
}
