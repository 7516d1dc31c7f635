import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SeededRng } from '@rl2/data';
import { writeDirAtomic, writeFileAtomic } from '@rl2/models';
import { TrainersError } from '../errors.js';
import type { AdamWState } from '../optim/adamw.js';
import { readTensorFile, writeTensorFile } from './tensor-file.js';

/** Everything besides the weights that a resumed run needs to continue exactly. */
export interface TrainerState {
  readonly version: 1;
  readonly trainer: 'sft' | 'rm' | 'dpo';
  /** Optimizer steps done. */
  readonly step: number;
  readonly totalSteps: number;
  /** Epoch in progress (0-based) and the batches of it already consumed. */
  readonly epoch: number;
  readonly batchInEpoch: number;
  /** Example order of the current epoch (indices into the training set). */
  readonly order: number[];
  /** Rng state after drawing `order`. */
  readonly rng: number[];
  /** Learning rate of the last step (the schedule is a pure function of step). */
  readonly lr: number;
  readonly savedAt: string;
}

/** What a checkpoint directory holds. */
export interface CheckpointContents {
  readonly state: TrainerState;
  readonly optimizer: AdamWState;
  /** Writes the HF model files (config.json, model.safetensors, tokenizer) into `dir`. */
  readonly saveModel?: (dir: string) => Promise<void> | void;
}

/**
 * Writes `dir` atomically: `model/` (HF format), `optimizer.safetensors` (AdamW moments),
 * `trainer_state.json`. The directory appears complete or not at all.
 */
export async function saveCheckpoint(dir: string, contents: CheckpointContents): Promise<void> {
  await writeDirAtomic(dir, async (tmp) => {
    if (contents.saveModel) await contents.saveModel(join(tmp, 'model'));
    const arrays: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const [name, m] of Object.entries(contents.optimizer.moments)) {
      arrays[`exp_avg.${name}`] = { shape: m.shape, data: m.m };
      arrays[`exp_avg_sq.${name}`] = { shape: m.shape, data: m.v };
    }
    writeTensorFile(join(tmp, 'optimizer.safetensors'), arrays, {
      step: String(contents.optimizer.step),
    });
    writeFileAtomic(
      join(tmp, 'trainer_state.json'),
      `${JSON.stringify(contents.state, null, 1)}\n`,
    );
  });
}

/** Reads the trainer state and optimizer moments of a checkpoint directory. */
export function loadCheckpoint(
  dir: string,
  trainer: TrainerState['trainer'],
): { state: TrainerState; optimizer: AdamWState } {
  let state: TrainerState;
  try {
    state = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as TrainerState;
  } catch (err) {
    throw new TrainersError(
      'CHECKPOINT',
      `cannot read ${join(dir, 'trainer_state.json')}: ${(err as Error).message}`,
    );
  }
  if (state.trainer !== trainer) {
    throw new TrainersError(
      'CHECKPOINT',
      `${dir} was written by "rl2 ${state.trainer}", not "rl2 ${trainer}"; point trainer.load_ckpt_from at a ${trainer} checkpoint`,
    );
  }
  try {
    SeededRng.fromState(state.rng);
  } catch (err) {
    throw new TrainersError(
      'CHECKPOINT',
      `${join(dir, 'trainer_state.json')}: rng: ${(err as Error).message} ` +
        'The file is damaged; resume from an earlier checkpoint.',
    );
  }
  const { arrays, metadata } = readTensorFile(join(dir, 'optimizer.safetensors'));
  const moments: Record<string, { shape: number[]; m: Float32Array; v: Float32Array }> = {};
  for (const [key, a] of Object.entries(arrays)) {
    if (!key.startsWith('exp_avg.')) continue;
    const name = key.slice('exp_avg.'.length);
    const v = arrays[`exp_avg_sq.${name}`];
    if (!v)
      throw new TrainersError(
        'CHECKPOINT',
        `${dir}/optimizer.safetensors lacks exp_avg_sq.${name}`,
      );
    moments[name] = { shape: a.shape, m: a.data, v: v.data };
  }
  return { state, optimizer: { step: Number(metadata.step ?? state.step), moments } };
}
