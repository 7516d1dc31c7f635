import type { TrainerSection } from '../config/sections.js';

/** How long a run is, from its data and batch size. */
export interface RunLength {
  /** Full batches per pass over the data (at least 1). */
  readonly stepsPerEpoch: number;
  /** trainer.n_epochs passes, capped by trainer.max_steps. */
  readonly totalSteps: number;
  /** Rows of each pass that no full batch takes (`rows mod batchSize`; 0 when one batch holds them all). */
  readonly leftOut: number;
}

/**
 * Steps per epoch and in all, as RL2 counts them: full batches only (its dataloaders drop the
 * last partial batch, `drop_last=True`), so `rows mod batchSize` rows of each epoch are not
 * trained on. A batch larger than the data takes it all in one step.
 */
export function runLength(
  trainer: Pick<TrainerSection, 'n_epochs' | 'max_steps'>,
  rows: number,
  batchSize: number,
): RunLength {
  const stepsPerEpoch = Math.max(1, Math.floor(rows / batchSize));
  const totalSteps = Math.min(
    trainer.max_steps ?? Number.POSITIVE_INFINITY,
    trainer.n_epochs * stepsPerEpoch,
  );
  return { stepsPerEpoch, totalSteps, leftOut: rows > batchSize ? rows % batchSize : 0 };
}

/**
 * The line that says what full batches leave out, once at the start (undefined when nothing
 * is, or the run ends before its first epoch does): `what` names the rows ("training items",
 * "prompts") and `batchKey` the key that sets `batchSize`.
 */
export function describeLeftOut(
  length: RunLength,
  rows: number,
  what: string,
  batchKey: string,
  batchSize: number,
): string | undefined {
  const { stepsPerEpoch, totalSteps, leftOut } = length;
  if (leftOut === 0 || totalSteps < stepsPerEpoch) return undefined;
  return (
    `${stepsPerEpoch} steps per epoch of ${batchKey}=${batchSize} take ${rows - leftOut} of the ` +
    `${rows} ${what}: ${leftOut} per epoch are not trained on (as RL2's dataloader drops its last ` +
    `partial batch); set ${batchKey} to a divisor of ${rows} to use them all`
  );
}
