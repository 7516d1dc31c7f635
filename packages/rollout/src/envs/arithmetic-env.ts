/**
 * A single-turn verifiable-reward env: reward 1 when the last number in the response (or the
 * one inside <answer>...</answer> when present) equals the answer, else 0. Point
 * `rollout.env_path` at this file for arithmetic or countdown-style datasets {prompt, answer}.
 */
const tagged = /<answer>\s*(-?\d+(?:\.\d+)?)\s*<\/answer>/;
const numbers = /-?\d+(?:\.\d+)?/g;

export async function step(
  _state: string,
  action: string,
  answer: unknown,
): Promise<[null, number, true]> {
  const pred = extractAnswer(action);
  return [null, pred !== undefined && pred === Number(answer) ? 1 : 0, true];
}

/** The number the response commits to: the <answer> tag's, else the last number. */
export function extractAnswer(response: string): number | undefined {
  const t = tagged.exec(response);
  if (t) return Number(t[1]);
  const all = response.match(numbers);
  return all ? Number(all[all.length - 1]) : undefined;
}
