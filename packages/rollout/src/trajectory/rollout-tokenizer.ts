/**
 * The two tokenizer calls a rollout needs (a structural subset of the @rl2/data Tokenizer):
 * `encode` text without adding special tokens (the chat template already has them), and
 * `decode` generated ids into the action text the env sees. Keep special tokens when decoding
 * (the @rl2/data default): then state + action is exactly the text of the sequence's ids, and
 * a chat-templated next state that closes the turn with the end-of-turn token still passes the
 * prefix test without repeating that token.
 */
export interface RolloutTokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
}
