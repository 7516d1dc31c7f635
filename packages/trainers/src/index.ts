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
export { clipGradNorm } from './optim/clip-grad-norm.js';
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
export { writeFileAtomic, writeDirAtomic } from './checkpoint/atomic-write.js';
