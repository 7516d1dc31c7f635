import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { stringify } from 'yaml';
import { updateLink } from '../checkpoint/atomic-write.js';
import { checkpointDirName } from '../checkpoint/resolve-checkpoint.js';
import { Rng } from '../checkpoint/rng.js';
import { type TrainerState, loadCheckpoint, saveCheckpoint } from '../checkpoint/trainer-state.js';
import type { TrainerSection, ModelSection } from '../config/sections.js';
import type { TrainingItem } from '../dataset/training-item.js';
import { TrainersError } from '../errors.js';
import { type MetricRecord, MetricsLog } from '../metrics/metrics-log.js';
import { type Progress, createProgress } from '../metrics/progress.js';
import { TensorBoardWriter } from '../metrics/tensorboard-writer.js';
import { AdamW } from '../optim/adamw.js';
import { type ScheduleOptions, scheduledLr } from '../optim/cosine-schedule.js';
import { writeReport } from '../report/write-report.js';
import type { ParamMap } from '@rl2/models';
import { type RankLayout, microBatchBudget } from '../parallel-model/rank-layout.js';
import { type TrainedModel, checkpointOptimizerState } from '../parallel-model/trained-model.js';
import { layoutStep } from './layout-step.js';
import { evaluateBins } from './gradient-step.js';
import type { Objective } from './objective.js';
import { type PackedBin, packBins, stepTotals } from './pack-bins.js';
import { sumStepOverRanks, sumTotalsOverRanks } from './sum-over-ranks.js';

/** Where a run writes and how it can be stopped; all optional. */
export interface RunIo {
  /** Progress and log lines (default process.stdout). */
  readonly stdout?: NodeJS.WriteStream;
  /** Aborting it (Ctrl-C in the CLI) saves a checkpoint after the current step and returns. */
  readonly signal?: AbortSignal;
  /** Called after every optimizer step with its metrics. */
  readonly onStep?: (record: MetricRecord) => void;
}

/** What a finished or interrupted run reports. */
export interface RunResult {
  /** Optimizer steps done in total (including those before a resume). */
  readonly step: number;
  readonly totalSteps: number;
  readonly interrupted: boolean;
  readonly saveDir: string;
  /** The last checkpoint written (step-N directory). */
  readonly checkpoint: string;
  /** Train loss of every step this invocation ran, by step number. */
  readonly trainLoss: ReadonlyMap<number, number>;
  /** Metrics of the last validation, if any (`test/loss`, `test/accuracy`, ...). */
  readonly lastTest?: MetricRecord;
  readonly report?: string;
}

/** Everything the shared loop needs from a trainer. */
export interface LoopSpec<P> {
  readonly kind: TrainerState['trainer'];
  readonly trainer: TrainerSection;
  readonly model: ModelSection;
  /** `actor` or `critic`, for messages naming config keys. */
  readonly modelKey: string;
  readonly batchSize: number;
  readonly testBatchSize: number;
  readonly shuffle: boolean;
  readonly train: readonly TrainingItem[];
  readonly test: readonly TrainingItem[];
  /** The model as this rank trains it (its parameters, full tensors and optimizer state back). */
  readonly trained: TrainedModel;
  readonly objective: Objective<P>;
  /** Writes the HF model with these full parameters to `dir`. */
  readonly saveModel: (dir: string, params: ParamMap) => Promise<void>;
  /** Checkpoint directory to resume from (already resolved). */
  readonly resumeFrom?: string;
  /** The resolved config, written to save_dir/config.yaml. */
  readonly config: unknown;
  readonly io: RunIo;
  /**
   * Ranks this run is spread over and the model's place on them (see `planRankLayout`), as
   * `trained` was laid out. Each data-parallel rank trains on its slice of the step's bins; only
   * world rank 0 writes.
   */
  readonly layout: RankLayout;
  /** Opened by `openRun`: the loop frees `trained` and closes `layout.world` when it ends. */
  readonly owned?: boolean;
  /** What loading the data skipped, cut or dropped (`data/train/truncated_rows`, ...): logged at step 0 of a fresh run. */
  readonly dataMetrics?: Record<string, number>;
}

/** Progress of ranks other than 0: they train silently. */
const SILENT: Progress = { update: () => {}, log: () => {}, stop: () => {} };

const prefixed = (prefix: string, m: Record<string, number>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [`${prefix}/${k}`, v]));

/**
 * The loop SFT, RM and DPO share, as RL2's trainers run it: epochs over seeded-shuffled
 * batches; per step balanced packing, gradient accumulation over micro-batches with
 * global-mean scaling, clipping by the global norm, AdamW on the cosine schedule; validation
 * after every epoch (and every test_freq steps); checkpoints every save_freq steps and at
 * the end; metrics to JSONL, TensorBoard and the HTML report.
 *
 * Data parallel (started by `rl2 launch` or another launcher): rank r packs the same step into
 * a multiple of W bins and trains on its slice; token and sequence totals, then loss, metrics and
 * gradients are summed over the ranks (each share is already divided by the global totals), so
 * every rank clips by the same global norm and takes the same AdamW step. Rank 0 alone writes
 * checkpoints, metrics and progress.
 */
export async function runTrainingLoop<P>(spec: LoopSpec<P>): Promise<RunResult> {
  try {
    return await trainOnRanks(spec, spec.layout);
  } finally {
    if (spec.owned) {
      spec.trained.dispose();
      await spec.layout.world.close();
    }
  }
}

async function trainOnRanks<P>(spec: LoopSpec<P>, layout: RankLayout): Promise<RunResult> {
  const { trainer, model: m, io } = spec;
  const { data: dp } = layout;
  const isMain = layout.world.rank === 0;
  const out = io.stdout ?? process.stdout;
  const { budget, budgetKey } = microBatchBudget(m, spec.modelKey);
  const n = spec.train.length;
  const batchSize = Math.min(spec.batchSize, n);
  const batchesPerEpoch = Math.max(1, Math.floor(n / batchSize));
  const totalSteps = Math.min(trainer.max_steps ?? Number.POSITIVE_INFINITY, trainer.n_epochs * batchesPerEpoch);
  const schedule: ScheduleOptions = { lr: m.lr, minLr: m.min_lr, warmupRatio: m.warmup_ratio, totalSteps, kind: m.scheduler };
  const adamw = { betas: m.betas, eps: m.eps, weightDecay: m.weight_decay };
  const { trained } = spec;
  const optimizer = new AdamW(trained.params, adamw);
  const lockstep = trained.sharded; // ZeRO-3: every data-parallel rank runs as many passes
  // the test set is packed in chunks of data.test.batch_size items; the totals span all of it
  const testBins: PackedBin[] = [];
  for (let i = 0; i < spec.test.length; i += spec.testBatchSize) {
    testBins.push(...packBins(spec.test.slice(i, i + spec.testBatchSize), budget, spec.objective.groupSize, budgetKey, dp, lockstep));
  }
  const testTotals = sumTotalsOverRanks(dp, stepTotals(testBins));

  let step = 0;
  let epoch = 0;
  let batchInEpoch = 0;
  let rng = new Rng(trainer.seed);
  const identity = () => Array.from({ length: n }, (_, i) => i);
  let order = spec.shuffle ? rng.permutation(n) : identity();
  let lr = 0;
  if (spec.resumeFrom) {
    const saved = loadCheckpoint(spec.resumeFrom, spec.kind);
    if (saved.state.order.length !== n) {
      throw new TrainersError('CHECKPOINT', `${spec.resumeFrom}: saved for ${saved.state.order.length} training items, the data now has ${n}; resume with the same data`);
    }
    ({ step, epoch, batchInEpoch, order, lr } = saved.state);
    rng = new Rng(saved.state.rng);
    optimizer.loadState(trained.localOptimizerState(saved.optimizer));
  }

  const metrics = isMain ? new MetricsLog(join(trainer.save_dir, 'metrics.jsonl')) : undefined;
  metrics?.truncateAfter(spec.resumeFrom ? step : -1);
  if (isMain) writeFileSync(join(trainer.save_dir, 'config.yaml'), stringify(spec.config));
  const tb = isMain && trainer.use_tensorboard ? new TensorBoardWriter(join(trainer.save_dir, 'tensorboard')) : undefined;
  const progress = isMain ? createProgress({ total: totalSteps, start: step, mode: trainer.progress, logFreq: trainer.log_freq, stream: out }) : SILENT;
  const say = (line: string) => progress.log(line);
  say(
    `rl2 ${spec.kind} [${trainer.project}/${trainer.experiment_name}]: ${n} train / ${spec.test.length} test items, ${batchesPerEpoch} steps per epoch, ${totalSteps} steps` +
      (spec.resumeFrom ? `, resuming from ${spec.resumeFrom} at step ${step}` : '') +
      (layout.summary ? `, ${layout.summary}` : ''),
  );

  const record = (r: Record<string, number>) => {
    const rec = { step, time: Date.now() / 1000, ...r } as MetricRecord;
    metrics?.append(rec);
    tb?.addScalars(step, r);
    return rec;
  };
  let lastTest: MetricRecord | undefined;
  let validatedAt = -1;
  const validate = () => {
    if (spec.test.length === 0 || validatedAt === step) return;
    validatedAt = step;
    const res = sumStepOverRanks(dp, evaluateBins(testBins, testTotals, spec.objective));
    lastTest = record({ 'test/loss': res.loss, ...prefixed('test', res.metrics) });
    const shown = Object.entries(res.metrics)
      .map(([k, v]) => ` ${k} ${v.toFixed(4)}`)
      .join('');
    say(`validation @ step ${step} (epoch ${epoch + 1}): loss ${res.loss.toFixed(4)}${shown}`);
  };
  let checkpoint = spec.resumeFrom ?? '';
  let savedAt = spec.resumeFrom ? step : -1;
  const save = async () => {
    if (savedAt === step) return;
    savedAt = step;
    checkpoint = join(trainer.save_dir, checkpointDirName(step));
    // sharded optimizer state and parameters are gathered: collectives every rank joins
    const optimizerState = checkpointOptimizerState(trained, optimizer, layout, isMain);
    const model = trained.fullParams();
    if (!isMain || !optimizerState) {
      model.dispose();
      return;
    }
    const state: TrainerState = {
      version: 1,
      trainer: spec.kind,
      step,
      totalSteps,
      epoch,
      batchInEpoch,
      order,
      rng: rng.state(),
      lr,
      savedAt: new Date().toISOString(),
    };
    try {
      await saveCheckpoint(checkpoint, { state, optimizer: optimizerState, saveModel: (dir) => spec.saveModel(dir, model.params) });
    } finally {
      model.dispose();
    }
    updateLink(trainer.save_dir, 'latest', checkpointDirName(step));
    say(`saved checkpoint ${checkpoint}`);
  };

  if (spec.dataMetrics && !spec.resumeFrom) record(spec.dataMetrics);
  if (trainer.val_before_train && !spec.resumeFrom) validate();
  const trainLoss = new Map<number, number>();
  let interrupted = false;
  while (step < totalSteps) {
    // A step is synchronous tensor work: yield to the event loop between steps so that Ctrl-C
    // (a signal handler) and pending I/O run, and the stop flag below sees the interrupt.
    await new Promise<void>((next) => setImmediate(next));
    if (batchInEpoch >= batchesPerEpoch) {
      validate();
      epoch += 1;
      batchInEpoch = 0;
      order = spec.shuffle ? rng.permutation(n) : identity();
      continue;
    }
    const items = order.slice(batchInEpoch * batchSize, (batchInEpoch + 1) * batchSize).map((i) => spec.train[i]);
    const bins = packBins(items, budget, spec.objective.groupSize, budgetKey, dp, lockstep);
    const began = performance.now();
    const totals = sumTotalsOverRanks(dp, stepTotals(bins));
    lr = scheduledLr(step, schedule);
    const res = layoutStep({ layout, bins, totals, objective: spec.objective, trained, optimizer, lr, maxGradNorm: m.max_grad_norm, flags: [io.signal?.aborted ? 1 : 0] });
    const stopRequested = () => (layout.world.size > 1 ? (res.flags[0] as number) > 0 : Boolean(io.signal?.aborted));
    const seconds = (performance.now() - began) / 1000;
    step += 1;
    batchInEpoch += 1;
    trainLoss.set(step, res.loss);
    const tokensPerSecond = totals.tokens / Math.max(seconds, 1e-9);
    const rec = record({
      'train/loss': res.loss,
      'train/grad_norm': res.gradNorm,
      'train/lr': lr,
      'train/tokens_per_s': tokensPerSecond,
      'train/micro_batches': bins.length,
      ...prefixed('train', res.metrics),
    });
    const headline = spec.objective.headline;
    progress.update({
      step,
      loss: res.loss,
      tokensPerSecond,
      lr,
      extra: headline && res.metrics[headline] !== undefined ? { [headline]: res.metrics[headline] } : undefined,
    });
    io.onStep?.(rec);
    if (trainer.test_freq && step % trainer.test_freq === 0) validate();
    if (trainer.save_freq && step % trainer.save_freq === 0) await save();
    if (stopRequested()) {
      interrupted = true;
      await save();
      say(`interrupted at step ${step}/${totalSteps}; resume with trainer.load_ckpt_from=latest`);
      break;
    }
  }
  if (!interrupted) {
    validate();
    await save();
  }
  progress.stop();
  const report = isMain && trainer.report ? writeReport(trainer.save_dir) : undefined;
  if (report) out.write(`report: ${report}\n`);
  optimizer.dispose();
  return { step, totalSteps, interrupted, saveDir: trainer.save_dir, checkpoint, trainLoss, lastTest, report };
}
