/**
 * A verifiable reward for addition with partial credit, so that GRPO has a signal from a
 * weak starting model: 1 for the exact sum; otherwise 0.25 when the answer has as many digits
 * as the sum, plus 0.5 x the share of digits that match the sum when both are right-aligned
 * (units under units), over the longer of the two. Anything but digits earns 0.
 * Point rollout.env_path at this file; rows are {messages, answer}.
 */
export async function step(
  _state: string,
  action: string,
  answer: unknown,
): Promise<[null, number, true]> {
  return [null, additionReward(action.replace('<|im_end|>', '').trim(), String(answer)), true];
}

export function additionReward(response: string, sum: string): number {
  if (response === sum) return 1;
  if (!/^\d+$/.test(response)) return 0;
  const width = Math.max(response.length, sum.length);
  let matches = 0;
  for (let i = 1; i <= Math.min(response.length, sum.length); i++) {
    if (response[response.length - i] === sum[sum.length - i]) matches += 1;
  }
  return (response.length === sum.length ? 0.25 : 0) + (0.5 * matches) / width;
}
