/**
 * The two tokenizer calls a rollout needs (a structural subset of the @rl2/data tokenizer):
 * encode text without adding special tokens (the chat template already has them), and
 * decode generated ids into the action text the env sees.
 */
export interface RolloutTokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
}
