import { z } from 'zod';
import { ENGINE_BACKENDS } from '@rl2/engine';
import { option } from './option.js';

/** What `val_before_train` and `test_freq` mean to a trainer (its `--help` lines). */
export interface ValidationHelp {
  readonly val_before_train: string;
  readonly test_freq: string;
}

/** SFT, RM and DPO: validation on the test split after each epoch, and as these say. */
const EPOCH_VALIDATION: ValidationHelp = {
  val_before_train: 'validate once before the first step (a fresh run only), as verl does',
  test_freq: 'also validate every N steps (validation always runs after each epoch)',
};

/** `trainer.*`: run bookkeeping shared by SFT, RM, DPO and PPO (whose validation differs: `validation`). */
export function trainerSection(experimentName: string, validation = EPOCH_VALIDATION) {
  return z.strictObject({
    project: option(z.string(), 'rl2', 'project name, shown in the run header'),
    experiment_name: option(
      z.string().min(1),
      experimentName,
      'name of this run; names the default save_dir',
    ),
    n_epochs: option(z.number().int().positive(), 1, 'passes over the training set'),
    max_steps: option(
      z.number().int().positive().nullable(),
      null,
      'stop after this many optimizer steps (null: all epochs)',
    ),
    val_before_train: option(z.boolean(), true, validation.val_before_train),
    test_freq: option(z.number().int().positive().nullable(), null, validation.test_freq),
    on_nonfinite: option(
      z.enum(['stop', 'skip']),
      'stop',
      'a NaN/Inf loss or gradient norm: stop (exit 1, latest stays on the last checkpoint) or skip that update',
    ),
    save_dir: option(
      z.string().min(1),
      'ckpts/${trainer.experiment_name}',
      'checkpoints, metrics.jsonl, TensorBoard events and report.html go here (one run at a time: rl2.lock)',
    ),
    save_freq: option(
      z.number().int().positive().nullable(),
      null,
      'save a checkpoint every N steps (one is always saved at the end)',
    ),
    load_ckpt_from: option(
      z.string().nullable(),
      null,
      'resume: "latest" (newest step-N in save_dir) or a checkpoint directory (of the same model_name)',
    ),
    backend: option(
      z.enum(ENGINE_BACKENDS),
      'auto',
      'tensor backend (auto: RL2_BACKEND if set, else tfjs-node if installed, a hardware GPU ' +
        'through webgpu, native OpenBLAS kernels, cpu); a named one that cannot start is an error',
    ),
    threads: option(
      z.number().int().positive().nullable(),
      null,
      'compute threads (null: RL2_THREADS or all cores)',
    ),
    seed: option(
      z.number().int().nonnegative(),
      42,
      'seed for data order, the train/test split and initialisation',
    ),
    progress: option(
      z.enum(['auto', 'bar', 'lines', 'none']),
      'auto',
      'progress display: a bar on a terminal, plain lines otherwise',
    ),
    log_freq: option(
      z.number().int().positive(),
      1,
      'print a progress line every N steps when not drawing a bar',
    ),
    use_tensorboard: option(
      z.boolean(),
      true,
      'write TensorBoard event files under save_dir/tensorboard',
    ),
    report: option(
      z.boolean(),
      true,
      'write save_dir/report.html (loss and metric curves) at the end',
    ),
  });
}
