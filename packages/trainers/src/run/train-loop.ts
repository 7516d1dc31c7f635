import { SeededRng } from '@rl2/data';
import type { LoraModel, ParamMap } from '@rl2/models';
import { type PackedBin, packBins, stepTotals } from '../bins/pack-bins.js';
import { type TrainerState, loadCheckpoint, saveCheckpoint } from '../checkpoint/trainer-state.js';
import type { ModelSection, TrainerSection } from '../config/sections.js';
import type { TrainingItem } from '../dataset/training-item.js';
import { TrainersError } from '../errors.js';
import type { MetricRecord } from '../metrics/metrics-log.js';
import type { AdamW } from '../optim/adamw.js';
import { sectionOptimizer } from '../optim/section-optimizer.js';
import { type RankLayout, microBatchBudget } from '../parallel-model/rank-layout.js';
import { type TrainedModel, checkpointOptimizerState } from '../parallel-model/trained-model.js';
import { evaluateBins } from '../step/gradient-step.js';
import { layoutStep } from '../step/layout-step.js';
import type { Objective } from '../step/objective.js';
import { sumStepOverRanks, sumTotalsOverRanks } from '../step/sum-over-ranks.js';
import { prefixed } from '../metrics/prefixed.js';
import { describeLeftOut, runLength } from './run-length.js';
import { type RunIo, RunSession, type SessionResult } from './run-session.js';
import { type LoopStep, runSteps } from './step-loop.js';
import { withLoraDropout } from '../lora/lora-objective.js';

/** What a finished or interrupted SFT, RM or DPO run reports. */
export interface RunResult extends SessionResult {
  /** Train loss of every step this invocation ran, by step number. */
  readonly trainLoss: ReadonlyMap<number, number>;
  /** Metrics of the last validation, if any (`test/loss`, `test/accuracy`, ...). */
  readonly lastTest?: MetricRecord;
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
  /** The adapters a LoRA run trains (their dropout is keyed per micro-batch). */
  readonly lora?: LoraModel;
  /** What loading the data skipped, cut or dropped (`data/train/truncated_rows`, ...): logged at step 0 of a fresh run. */
  readonly dataMetrics?: Record<string, number>;
}

/** Where an epoch-based run stands: what a checkpoint stores besides weights and moments. */
interface EpochCursor {
  epoch: number;
  batchInEpoch: number;
  order: number[];
  rng: SeededRng;
  lr: number;
}

/**
 * The loop SFT, RM and DPO share, as RL2's trainers run it: epochs over seeded-shuffled
 * batches; per step balanced packing, gradient accumulation over micro-batches with
 * global-mean scaling, clipping by the global norm, AdamW on the cosine schedule; validation
 * after every epoch (and every test_freq steps); checkpoints every save_freq steps and at
 * the end; metrics to JSONL, TensorBoard and the HTML report (see `RunSession`).
 *
 * Data parallel (started by `rl2 launch` or another launcher): rank r packs the same step into
 * a multiple of W bins and trains on its slice; token and sequence totals, then loss, metrics and
 * gradients are summed over the ranks (each share is already divided by the global totals), so
 * every rank clips by the same global norm and takes the same AdamW step. Rank 0 alone writes
 * checkpoints, metrics and progress.
 */
export async function runTrainingLoop<P>(spec: LoopSpec<P>): Promise<RunResult> {
  try {
    const objective = withLoraDropout(spec.objective, spec.lora, spec.trainer.seed);
    return await trainOnRanks({ ...spec, objective }, spec.layout);
  } finally {
    if (spec.owned) {
      spec.trained.dispose();
      await spec.layout.world.close();
    }
  }
}

async function trainOnRanks<P>(spec: LoopSpec<P>, layout: RankLayout): Promise<RunResult> {
  const { trainer, model: m, trained, objective } = spec;
  const { budget, budgetKey } = microBatchBudget(m, spec.modelKey);
  const n = spec.train.length;
  const batchSize = Math.min(spec.batchSize, n);
  const length = runLength(trainer, n, spec.batchSize);
  const { stepsPerEpoch, totalSteps } = length;
  const { optimizer, lrAt } = sectionOptimizer(m, trained.params, totalSteps);
  const lockstep = trained.sharded; // ZeRO-3: every data-parallel rank runs as many passes
  const pack = (items: readonly TrainingItem[]) =>
    packBins(items, budget, objective.groupSize, budgetKey, layout.data, lockstep);
  const testSet = packTestSet(spec, layout, pack);
  const { step, cursor } = startingPoint(spec, optimizer);
  const session = new RunSession({
    trainer,
    config: spec.config,
    io: spec.io,
    world: layout.world,
    totalSteps,
    resumeFrom: spec.resumeFrom,
    step,
  });
  try {
    session.say(
      `rl2 ${spec.kind} [${trainer.project}/${trainer.experiment_name}]: ${n} train ` +
        `/ ${spec.test.length} test items, ${stepsPerEpoch} steps per epoch, ${totalSteps} steps` +
        (spec.resumeFrom ? `, resuming from ${spec.resumeFrom} at step ${step}` : '') +
        (layout.summary ? `, ${layout.summary}` : ''),
    );
    const leftOut = describeLeftOut(
      length,
      n,
      'training items',
      'data.train.batch_size',
      spec.batchSize,
    );
    if (leftOut) session.say(`rl2 ${spec.kind}: ${leftOut}`);
    const validate = () =>
      session.test(() =>
        validation(spec, layout, testSet, `@ step ${session.step} (epoch ${cursor.epoch + 1})`),
      );
    const save = () =>
      session.save((dir) => writeCheckpoint(spec, layout, session, optimizer, cursor, dir));
    if (spec.dataMetrics && !spec.resumeFrom) session.record(spec.dataMetrics);
    /** The next batch of the epoch; at an epoch's end, validation and the next epoch's order first. */
    const nextItems = async () => {
      if (cursor.batchInEpoch >= stepsPerEpoch) {
        await validate();
        cursor.epoch += 1;
        cursor.batchInEpoch = 0;
        cursor.order = epochOrder(spec, cursor.rng);
      }
      const from = cursor.batchInEpoch * batchSize;
      cursor.batchInEpoch += 1;
      return cursor.order.slice(from, from + batchSize).map((i) => spec.train[i]);
    };
    const trainStep = async (): Promise<LoopStep> => {
      const bins = pack(await nextItems());
      cursor.lr = lrAt(session.step);
      return optimizerStep(spec, layout, bins, optimizer, cursor.lr, session.stopFlag);
    };
    const steps = await runSteps({
      session,
      trainer,
      beforeFirstStep: async () => (trainer.val_before_train ? validate() : undefined),
      step: trainStep,
      evaluate: validate,
      save,
    });
    const trainLoss = new Map(steps.map((r) => [r.step, r['train/loss'] as number]));
    return { ...session.finish(), trainLoss, lastTest: session.tests.at(-1) };
  } finally {
    session.close();
    optimizer.dispose();
  }
}

/** One optimizer step on this rank's `bins` (`layoutStep`), as the loop records and shows it. */
async function optimizerStep<P>(
  spec: LoopSpec<P>,
  layout: RankLayout,
  bins: readonly PackedBin[],
  optimizer: AdamW,
  lr: number,
  stopFlag: number,
): Promise<LoopStep> {
  const { objective, trained } = spec;
  const began = performance.now();
  const totals = sumTotalsOverRanks(layout.data, stepTotals(bins));
  const res = await layoutStep({
    layout,
    bins,
    totals,
    objective,
    trained,
    optimizer,
    lr,
    maxGradNorm: spec.model.max_grad_norm,
    flags: [stopFlag],
  });
  const tokensPerSecond = totals.tokens / Math.max((performance.now() - began) / 1000, 1e-9);
  const { headline } = objective;
  return {
    values: {
      'train/loss': res.loss,
      'train/grad_norm': res.gradNorm,
      'train/lr': lr,
      'train/tokens_per_s': tokensPerSecond,
      'train/micro_batches': bins.length,
      ...prefixed('train', res.metrics),
    },
    shown: {
      loss: res.loss,
      tokensPerSecond,
      lr,
      extra:
        headline && res.metrics[headline] !== undefined
          ? { [headline]: res.metrics[headline] }
          : undefined,
    },
    watched: { 'train/loss': res.loss, 'train/grad_norm': res.gradNorm },
    stopFlag: res.flags[0],
  };
}

const identity = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The data order of a new epoch: a seeded permutation, or the file order without data.shuffle. */
function epochOrder(spec: LoopSpec<unknown>, rng: SeededRng): number[] {
  return spec.shuffle ? rng.permutation(spec.train.length) : identity(spec.train.length);
}

/** Step 0 with the first epoch's order, or where the checkpoint left off (its optimizer state loaded). */
function startingPoint(
  spec: LoopSpec<unknown>,
  optimizer: AdamW,
): { step: number; cursor: EpochCursor } {
  const n = spec.train.length;
  if (!spec.resumeFrom) {
    const rng = new SeededRng(spec.trainer.seed);
    return {
      step: 0,
      cursor: { epoch: 0, batchInEpoch: 0, order: epochOrder(spec, rng), rng, lr: 0 },
    };
  }
  const saved = loadCheckpoint(spec.resumeFrom, spec.kind);
  if (saved.state.order.length !== n) {
    throw new TrainersError(
      'CHECKPOINT',
      `${spec.resumeFrom}: saved for ${saved.state.order.length} training items, the data now has ${n}; resume with the same data`,
    );
  }
  optimizer.loadState(spec.trained.localOptimizerState(saved.optimizer));
  const { step, epoch, batchInEpoch, order, lr } = saved.state;
  return {
    step,
    cursor: { epoch, batchInEpoch, order, rng: SeededRng.fromState(saved.state.rng), lr },
  };
}

/** The test split packed once, in chunks of data.test.batch_size items; the totals span all of it. */
function packTestSet(
  spec: LoopSpec<unknown>,
  layout: RankLayout,
  pack: (items: readonly TrainingItem[]) => PackedBin[],
) {
  const bins: PackedBin[] = [];
  for (let i = 0; i < spec.test.length; i += spec.testBatchSize)
    bins.push(...pack(spec.test.slice(i, i + spec.testBatchSize)));
  return { bins, totals: sumTotalsOverRanks(layout.data, stepTotals(bins)) };
}

/** Validation on the test split, without gradients, summed over the data-parallel ranks: its metrics and line. */
async function validation<P>(
  spec: LoopSpec<P>,
  layout: RankLayout,
  testSet: ReturnType<typeof packTestSet>,
  when: string,
) {
  if (spec.test.length === 0) return undefined;
  const res = await sumStepOverRanks(
    layout.data,
    await evaluateBins(testSet.bins, testSet.totals, spec.objective),
  );
  const shown = Object.entries(res.metrics)
    .map(([k, v]) => ` ${k} ${v.toFixed(4)}`)
    .join('');
  return {
    values: { 'test/loss': res.loss, ...prefixed('test', res.metrics) },
    line: `validation ${when}: loss ${res.loss.toFixed(4)}${shown}`,
  };
}

/** One checkpoint: sharded optimizer state and parameters are gathered (collectives every rank joins), rank 0 writes. */
async function writeCheckpoint(
  spec: LoopSpec<unknown>,
  layout: RankLayout,
  session: RunSession,
  optimizer: AdamW,
  cursor: EpochCursor,
  dir: string,
): Promise<void> {
  const optimizerState = await checkpointOptimizerState(
    spec.trained,
    optimizer,
    layout,
    session.isMain,
  );
  const model = spec.trained.fullParams();
  try {
    if (!session.isMain || !optimizerState) return;
    const state: TrainerState = {
      version: 1,
      trainer: spec.kind,
      step: session.step,
      totalSteps: session.totalSteps,
      epoch: cursor.epoch,
      batchInEpoch: cursor.batchInEpoch,
      order: cursor.order,
      rng: cursor.rng.state(),
      lr: cursor.lr,
      savedAt: new Date().toISOString(),
    };
    await saveCheckpoint(dir, {
      state,
      optimizer: optimizerState,
      saveModel: (modelDir) => spec.saveModel(modelDir, model.params),
    });
  } finally {
    model.dispose();
  }
}
