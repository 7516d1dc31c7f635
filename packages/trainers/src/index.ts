export { TrainersError } from './errors.js';
export type { TrainersErrorCode } from './errors.js';

// Config: one zod schema per trainer, YAML + dotted overrides + ${...} interpolation.
export { sftConfigSchema } from './config/sft-config.js';
export type { SftConfig } from './config/sft-config.js';
export { rmConfigSchema } from './config/rm-config.js';
export type { RmConfig } from './config/rm-config.js';
export { dpoConfigSchema } from './config/dpo-config.js';
export type { DpoConfig } from './config/dpo-config.js';
export { loadConfig, configDefaults } from './config/load-config.js';
export type { LoadConfigOptions } from './config/load-config.js';
export { formatConfigHelp } from './config/format-config-help.js';
export { configLeaves } from './config/config-leaves.js';
export type { ConfigLeaf } from './config/config-leaves.js';
export { closestKey, editDistance } from './config/closest-key.js';
export { option } from './config/option.js';

// Optimizer and schedule.
export { AdamW } from './optim/adamw.js';
export type { AdamWOptions, AdamWState } from './optim/adamw.js';
export { scheduledLr, warmupSteps } from './optim/cosine-schedule.js';
export type { ScheduleOptions } from './optim/cosine-schedule.js';
export { clipGradNorm, gradNorm } from './optim/clip-grad-norm.js';
export type { NamedGrads } from './optim/clip-grad-norm.js';

// Seeing progress: metrics JSONL, TensorBoard events, progress display, HTML report.
export { MetricsLog, readMetrics } from './metrics/metrics-log.js';
export type { MetricRecord } from './metrics/metrics-log.js';
export { TensorBoardWriter, tfRecord, scalarEvent } from './metrics/tensorboard-writer.js';
export { crc32c, maskedCrc32c } from './metrics/crc32c.js';
export { createProgress, formatDuration } from './metrics/progress.js';
export type { Progress, ProgressOptions, ProgressUpdate } from './metrics/progress.js';
export { renderHtmlReport } from './report/html-report.js';
export { writeReport } from './report/write-report.js';

// Checkpoints and resumable randomness.
export { Rng } from './checkpoint/rng.js';
export { saveCheckpoint, loadCheckpoint } from './checkpoint/trainer-state.js';
export type { TrainerState, CheckpointContents } from './checkpoint/trainer-state.js';
export { resolveCheckpoint, listCheckpoints, checkpointDirName } from './checkpoint/resolve-checkpoint.js';
export { writeFileAtomic } from './checkpoint/atomic-write.js';
/** The atomic folder save of @rl2/models, re-exported where checkpoints were always found. */
export { writeDirAtomic } from '@rl2/models';

// Models without a download: a random HF checkpoint with a chosen tokenizer.
export { writeRandomCheckpoint, MODEL_ARCHS } from './model-init/random-checkpoint.js';
export type { ModelArch, RandomModelOptions } from './model-init/random-checkpoint.js';
export { readTokenizerFacts, copyTokenizerFiles } from './model-init/tokenizer-files.js';

// The trainers and their shared loop.
export { runSft } from './sft/run-sft.js';
export { runRm } from './rm/run-rm.js';
export { runDpo } from './dpo/run-dpo.js';
export { runTrainingLoop } from './run/train-loop.js';
export type { RunResult, LoopSpec } from './run/train-loop.js';
export { RunSession } from './run/run-session.js';
export type { RunIo, RunSessionOptions, SessionResult } from './run/run-session.js';
export type { Objective } from './step/objective.js';
export { packBins, stepTotals } from './bins/pack-bins.js';
export type { PackedBin, StepTotals } from './bins/pack-bins.js';
export { SINGLE_PROCESS, openDataParallel } from './parallel-model/data-parallel.js';
export type { DataParallel } from './parallel-model/data-parallel.js';
export { sumStepOverRanks, sumTotalsOverRanks } from './step/sum-over-ranks.js';
export { layoutStep } from './step/layout-step.js';
export { ONE_PROCESS, microBatchBudget, planRankLayout } from './parallel-model/rank-layout.js';
export type { ParallelSizes, RankLayout } from './parallel-model/rank-layout.js';
export { fullOptimizerState, fullParams, localOptimizerState, parallelDecoder } from './parallel-model/tensor-parallel-model.js';
export { decoderUnitOf, trainModel } from './parallel-model/trained-model.js';
export type { TrainedModel } from './parallel-model/trained-model.js';
export { contextParallelSplit } from './parallel-model/context-split.js';
export { sftObjective, AVG_LEVELS } from './sft/sft-objective.js';
export { rmObjective } from './rm/rm-objective.js';
export { dpoObjective } from './dpo/dpo-objective.js';
export type { DpoObjectiveOptions } from './dpo/dpo-objective.js';
export { loadItems } from './dataset/load-items.js';
export type { TrainingItem, TrainingSequence } from './dataset/training-item.js';
export type { TrainerSection, ModelSection } from './config/sections.js';

// PPO / GRPO (rl2 ppo); serving a checkpoint (rl2 serve) is @rl2/rollout's serveModel.
export { PPO_ADV_ESTIMATORS, PPO_AVG_LEVELS, checkPpoConfig, ppoConfigSchema } from './ppo/ppo-config.js';
export type { PpoConfig } from './ppo/ppo-config.js';
export { runPpo } from './ppo/run-ppo.js';
export type { PpoRunResult } from './ppo/run-ppo.js';
export { computePpoAdvantages } from './ppo/ppo-advantages.js';
export { ppoTrainStep } from './ppo/ppo-train-step.js';
export type { PpoPasses, PpoStepState } from './ppo/ppo-train-step.js';
export type { AdvantageInputs, AdvantageOutputs } from './ppo/ppo-advantages.js';
