/**
 * Dynamic filtering (DAPO, https://arxiv.org/abs/2503.14476; RL2 `dynamic_filtering`): a group
 * of responses to one prompt whose rewards are all equal has zero group-relative advantage,
 * so it only dilutes the batch. True when `rewards` [G] has G > 1 and every value equals the
 * first (RL2 tests std == 0, which is the same).
 */
export function isUniformGroup(rewards: readonly number[]): boolean {
  return rewards.length > 1 && rewards.every((r) => r === rewards[0]);
}
