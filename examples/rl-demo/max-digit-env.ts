/**
 * The RL demo's verifiable reward: 1 when the response (without the end-of-turn token and
 * surrounding whitespace) is the largest digit of the prompt, 0 otherwise. The answer column
 * holds that digit. Point rollout.env_path at this file; rows are {messages, answer}.
 */
export async function step(
  _state: string,
  action: string,
  answer: unknown,
): Promise<[null, number, true]> {
  return [null, maxDigitReward(action, String(answer)), true];
}

export function maxDigitReward(response: string, answer: string): number {
  return response.replace('<|im_end|>', '').trim() === answer ? 1 : 0;
}
