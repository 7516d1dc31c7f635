import { extractAnswer } from './extract-answer.js';
import { mathEqual } from './math-equal.js';

/**
 * math_verify's `verify(parse(gold), parse(response))` as RL2's envs/orz.py calls it: the final
 * answer of each text (see extractAnswer) compared with mathEqual. A gold answer given as a list
 * (several accepted forms) matches when any one does. False when either has no answer.
 */
export function verifyMath(gold: string | string[], response: string): boolean {
  const pred = extractAnswer(response);
  if (pred === null) return false;
  return (Array.isArray(gold) ? gold : [gold]).some((g) => {
    const want = extractAnswer(g);
    return want !== null && mathEqual(want, pred);
  });
}
