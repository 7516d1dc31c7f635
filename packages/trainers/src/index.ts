// @rl2/trainers: RL2's SFT, reward-model, DPO and PPO/GRPO trainers on TensorFlow.js. Most people
// drive them through the `rl2` command (@rl2/cli); this is the same from code. Everything else
// (the shared loop, objectives, layouts, optimizer, metrics writers) is internal.

// Errors: every message names the config key, file or row to fix.
export { TrainersError } from './errors.js';
export type { TrainersErrorCode } from './errors.js';

// Config: one zod schema per trainer; defaults, YAML, key=value overrides and ${a.b}, validated once.
export { sftConfigSchema } from './config/sft-config.js';
export type { SftConfig } from './config/sft-config.js';
export { rmConfigSchema } from './config/rm-config.js';
export type { RmConfig } from './config/rm-config.js';
export { dpoConfigSchema } from './config/dpo-config.js';
export type { DpoConfig } from './config/dpo-config.js';
export { ppoConfigSchema } from './ppo/ppo-config.js';
export type { PpoConfig } from './ppo/ppo-config.js';
export type { ModelSection, TrainerSection } from './config/sections.js';
export { configDefaults, loadConfig } from './config/load-config.js';
export type { LoadConfigOptions } from './config/load-config.js';
export { formatConfigHelp } from './config/format-config-help.js';
export { configLeaves } from './config/config-leaves.js';
export { closestKey, editDistance } from './config/closest-key.js';
export type { ConfigLeaf } from './config/config-leaves.js';

// Trainers: run a validated config. Aborting `RunIo.signal` (Ctrl-C, SIGTERM) saves after the step.
export { runSft } from './sft/run-sft.js';
export { runRm } from './rm/run-rm.js';
export { runDpo } from './dpo/run-dpo.js';
export type { RunResult } from './run/train-loop.js';
export { runPpo } from './ppo/run-ppo.js';
export type { PpoRunResult } from './ppo/run-ppo.js';
export type { RunIo, SessionResult } from './run/run-session.js';

// A run's folder: step-N checkpoints and the `latest` link, metrics.jsonl, report.html.
export { listCheckpoints, resolveCheckpoint } from './checkpoint/resolve-checkpoint.js';
export { readMetricsLog } from './metrics/metrics-log.js';
export type { MetricRecord } from './metrics/metrics-log.js';
export { writeReport } from './report/write-report.js';

// Models without a download: a random Hugging Face checkpoint with a chosen tokenizer (`rl2 init-model`).
export { MODEL_ARCHS, writeRandomCheckpoint } from './model-init/random-checkpoint.js';
export type { ModelArch, RandomModelOptions } from './model-init/random-checkpoint.js';

// LoRA checkpoints: a PEFT adapter merged into its base as a plain Hugging Face model (`rl2 export --merge`).
export { exportMerged } from './lora/export-merged.js';
export type { ExportMergedOptions } from './lora/export-merged.js';
