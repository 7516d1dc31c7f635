import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TrainersError } from '../errors.js';

/** Name of the checkpoint directory of step `step` inside save_dir. */
export const checkpointDirName = (step: number) => `step-${step}`;

/** Completed checkpoints (those with trainer_state.json) in `saveDir`, oldest first. */
export function listCheckpoints(saveDir: string): { step: number; dir: string }[] {
  if (!existsSync(saveDir)) return [];
  return readdirSync(saveDir)
    .map((name) => ({ name, m: /^step-(\d+)$/.exec(name) }))
    .filter((e) => e.m && existsSync(join(saveDir, e.name, 'trainer_state.json')))
    .map((e) => ({ step: Number(e.m?.[1]), dir: join(saveDir, e.name) }))
    .sort((a, b) => a.step - b.step);
}

/**
 * Resolves `trainer.load_ckpt_from`: null -> no resume; `latest` -> newest completed
 * `step-N` in save_dir (none yet: start fresh, as RL2 does); otherwise a checkpoint directory.
 * (Each save also points the `save_dir/latest` link at its step-N, for use as a model path.)
 */
export function resolveCheckpoint(saveDir: string, loadFrom: string | null): string | undefined {
  if (loadFrom === null) return undefined;
  if (loadFrom === 'latest') return listCheckpoints(saveDir).at(-1)?.dir;
  if (!existsSync(join(loadFrom, 'trainer_state.json'))) {
    throw new TrainersError(
      'CHECKPOINT',
      `trainer.load_ckpt_from=${loadFrom}: no trainer_state.json there; pass a step-N directory written by rl2, or "latest"`,
    );
  }
  return loadFrom;
}
