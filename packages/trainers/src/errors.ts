/**
 * Machine-readable reasons an @rl2/trainers call can fail (ROLLOUT_FAILED: PPO steps without a
 * usable sample, past rollout.max_failed_steps; SAVE_DIR_LOCKED: another run writes in trainer.save_dir; WRITE_FAILED: a run's folder
 * cannot be written, e.g. a full disk).
 */
export type TrainersErrorCode =
  | 'INVALID_ARGUMENT'
  | 'CONFIG_UNKNOWN_KEY'
  | 'CONFIG_INVALID_VALUE'
  | 'CONFIG_INTERPOLATION'
  | 'CONFIG_FILE'
  | 'BAD_DATA'
  | 'CHECKPOINT'
  | 'SAVE_DIR_LOCKED'
  | 'WRITE_FAILED'
  | 'TENSORBOARD'
  | 'MISSING_DEPENDENCY'
  | 'ROLLOUT_FAILED'
  /** A step's loss or gradient norm was NaN/Inf under trainer.on_nonfinite=stop. */
  | 'NON_FINITE';

/** Base error of @rl2/trainers: every message names the offending value and how to fix it. */
export class TrainersError extends Error {
  override readonly name = 'TrainersError';
  constructor(
    readonly code: TrainersErrorCode,
    message: string,
  ) {
    super(message);
  }
}
