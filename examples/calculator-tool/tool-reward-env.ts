/**
 * The calculator tool env of @rl2/rollout (packages/rollout/src/envs/calculator-env.ts) with
 * partial credit for using the tool's output, so that a tiny model gets a learning signal:
 * the final <answer>N</answer> earns 1 when N is the true answer, else 0.5 x the share of
 * digits of N that match the last <result> the calculator returned (right-aligned).
 * Tool calls, their results and the prefix merge are the rollout env's, unchanged.
 */
import { step as calculatorStep } from '../../packages/rollout/src/envs/calculator-env.ts';

const answerTag = /<answer>\s*(-?\d+)\s*<\/answer>/;
const resultTag = /<result>(-?\d+)<\/result>/g;

export async function step(
  state: string,
  action: string,
  answer: unknown,
): Promise<[string | null, number, boolean]> {
  const [next, reward, done] = await calculatorStep(state, action, answer);
  const given = answerTag.exec(action);
  if (!done || reward === 1 || !given) return [next, reward, done];
  const results = [...state.matchAll(resultTag)].map((m) => m[1]);
  const last = results.at(-1);
  return [next, last === undefined ? 0 : 0.5 * digitShare(given[1], last), done];
}

function digitShare(response: string, target: string): number {
  let matches = 0;
  for (let i = 1; i <= Math.min(response.length, target.length); i++) {
    if (response[response.length - i] === target[target.length - i]) matches += 1;
  }
  return matches / Math.max(response.length, target.length);
}
