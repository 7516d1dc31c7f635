import type { FinishReason } from '../inference/rollout-engine.js';

/**
 * One token sequence of a trajectory, all arrays [T] and aligned with `tokenIds` (no shift):
 * prompt tokens, then per turn the generated action tokens and, when the next state extends
 * the previous one, the environment's tokens.
 */
export interface TrajectorySequence {
  /** [T] token ids. */
  tokenIds: number[];
  /** [T] 1 on tokens the engine generated (trained on), 0 on prompt and env tokens. */
  actionMask: number[];
  /** [T] the engine's logprob of each generated token, 0 elsewhere. */
  logprobs: number[];
  /** [T] a turn's reward on its last generated token, 0 elsewhere. */
  rewards: number[];
}

/** One turn, as recorded for logs and JSONL. */
export interface TurnRecord {
  state: string;
  action: string;
  reward: number;
  finishReason: FinishReason;
  /** Generated tokens in this turn. */
  actionTokens: number;
  /** How the next turn continued: in the same sequence, in a new one, or not at all. */
  next: 'merge' | 'split' | 'done' | 'max_turns' | 'max_length';
}

/** One response to one prompt: possibly several turns and several sequences. */
export interface Trajectory {
  /** Serial number of the prompt's group in its runner (unique across steps; TrainingBatch renumbers). */
  promptId: number;
  /** Index of this response within its group, 0..responsesPerPrompt-1. */
  sampleId: number;
  prompt: string;
  answer: unknown;
  sequences: TrajectorySequence[];
  turns: TurnRecord[];
  /** Sum of the turn rewards. */
  reward: number;
  /** Set when the env or engine failed for this sample; it is then left out of training. */
  error?: { code: string; message: string };
}
