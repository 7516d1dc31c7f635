import type { Tensor } from '@tensorflow/tfjs-core';

/**
 * The one data layout every function of @rl2/algos reads.
 *
 * Per-token tensors are `[B, T]`: B rows of T positions. A row is either one (right-padded)
 * sequence, or a packed micro-batch holding several sequences back to back. Position t of a
 * row holds the quantities of the action token predicted there (RL2's `actions = tokens[1:]`
 * shift is already applied by the caller).
 *
 * - `actionMask [B, T]`: 1 where the token is trained on (a generated / assistant token),
 *   0 for prompt, environment-observation and padding tokens.
 * - `sequenceIds [B, T]` (int32, optional): which sequence each token belongs to, numbered
 *   0..S-1 in any order, -1 for padding. Omit it when every row holds exactly one sequence:
 *   then the sequence id of a token is its row index. Sequence-level quantities
 *   (sequence-mean losses, GSPO ratios, DPO/RM sequence sums) are computed per id, so the
 *   same numbers come out whether sequences are packed or padded.
 */
export interface TokenLayout {
  /** [B, T] float32 0/1: 1 where the token is an action that is trained on. */
  readonly actionMask: Tensor;
  /** [B, T] int32: sequence index per token (0..S-1), -1 for padding. Default: the row index. */
  readonly sequenceIds?: Tensor;
  /**
   * The same `actionMask` and `sequenceIds` as host arrays (row-major, B*T values), where the
   * caller has them (a trainer builds both from its packed bins). Which tokens count is
   * structure, known before the step: read from here it never waits on a device. Required on
   * backends that cannot read a tensor back synchronously (webgpu); optional on the CPU.
   */
  readonly host?: {
    readonly actionMask: ArrayLike<number>;
    readonly sequenceIds?: ArrayLike<number>;
  };
}

/**
 * Counts over the WHOLE update (all micro-batches on all data-parallel ranks), passed in as
 * plain numbers: compute them locally with `countTotals` and sum them across ranks (an
 * all-reduce) before calling a loss. Every loss divides by these global totals, so the sum
 * of the losses returned for all micro-batches on all ranks is exactly the global mean,
 * whatever the packing or rank layout.
 */
export interface GlobalTotals {
  /** Number of action tokens (actionMask == 1) in the update. */
  readonly actionTokens: number;
  /** Number of sequences with at least one action token in the update. */
  readonly sequences: number;
}

/**
 * A rollout batch for advantage estimation: per-token `[B, T]` tensors in the `TokenLayout`,
 * plus which trajectory each token belongs to. A trajectory (one response to one prompt,
 * possibly several turns) may span several rows/sequences; its action tokens, taken in
 * row-major order, form its action-only timeline (observation tokens are skipped).
 */
export interface TrajectoryBatch {
  /** [B, T] float32: per-token rewards (RL2 puts a turn's reward on its last generated token). */
  readonly rewards: Tensor;
  /** [B, T] float32 0/1: 1 on generated (trained) tokens. */
  readonly actionMask: Tensor;
  /**
   * [B, T] or [B] int32: trajectory index per token or per row, 0..N-1, -1 for padding.
   * Default: the row index (each row is one single-sequence trajectory). For grouped
   * estimators the responses of one prompt must have consecutive ids:
   * trajectory k belongs to prompt floor(k / responsesPerPrompt).
   */
  readonly trajectoryIds?: Tensor;
}
