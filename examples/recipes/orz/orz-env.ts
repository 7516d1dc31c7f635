/**
 * Open-Reasoner-Zero's reward (RL2's envs/orz.py): one turn, reward 1 when the response's final
 * answer (its last `\boxed{}`, else its last answer) is mathematically equal to the row's
 * `answer`, else 0. Point `rollout.env_path` at this file; rows are {prompt|messages, answer}
 * where answer is a string (or a list of accepted forms).
 */
import { verifyMath } from './verify-math.js';

export async function step(
  _state: string,
  action: string,
  answer: unknown,
): Promise<[null, number, true]> {
  const gold = Array.isArray(answer) ? answer.map(String) : String(answer);
  return [null, verifyMath(gold, action.replace(/<\|im_end\|>$/, '')) ? 1 : 0, true];
}
