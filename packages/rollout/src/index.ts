export { RolloutError } from './errors.js';
export type { RolloutErrorCode } from './errors.js';

// Engines: one interface, an SGLang HTTP client and an in-process adapter.
export type {
  EngineHealth,
  FinishReason,
  GenerateRequest,
  GenerateResult,
  RolloutEngine,
  SamplingParams,
} from './inference/rollout-engine.js';
export { createRolloutEngine } from './inference/create-rollout-engine.js';
export type { RolloutEngineConfig } from './inference/create-rollout-engine.js';
export { createSGLangEngine } from './inference/sglang-engine.js';
export type { SGLangEngine, SGLangEngineOptions } from './inference/sglang-engine.js';
export { createEmbeddedEngine } from './inference/embedded-engine.js';
export type {
  EmbeddedEngineOptions,
  TokenGenerator,
  TokenGeneratorRequest,
  TokenGeneratorResult,
} from './inference/embedded-engine.js';
export { loadCheckpointEngine } from './inference/checkpoint-engine.js';
export type { CheckpointEngine, CheckpointEngineOptions } from './inference/checkpoint-engine.js';
export { createToyGenerator } from './inference/toy-generator.js';
export type { ToyGeneratorOptions } from './inference/toy-generator.js';
export type { BackoffOptions } from './inference/backoff.js';
export type { BalanceStrategy } from './inference/url-balancer.js';

// An SGLang-compatible HTTP server over any engine (`rl2 serve`).
export { startSGLangServer } from './server/sglang-server.js';
export type { SGLangServer, SGLangServerOptions } from './server/sglang-server.js';

// Environments: user modules with an async step(state, action, answer).
export { loadEnvironment } from './env/load-environment.js';
export { createEnvironment } from './env/create-environment.js';
export type { EnvironmentOptions } from './env/create-environment.js';
export type { LoadEnvironmentOptions } from './env/load-environment.js';
export type {
  EnvModule,
  EnvResetOutput,
  EnvStep,
  EnvStepOutput,
  Environment,
  RolloutPrompt,
} from './env/environment.js';

// Trajectories: multi-turn assembly and the training layout.
export { runTrajectory } from './trajectory/run-trajectory.js';
export type { TrajectoryOptions } from './trajectory/run-trajectory.js';
export { TrajectoryAssembler } from './trajectory/trajectory-assembler.js';
export { toTrainingBatch } from './trajectory/to-training-batch.js';
export type { TrainingBatch, TrainingSequence } from './trajectory/to-training-batch.js';
export { padTrainingBatch } from './trajectory/pad-training-batch.js';
export type { PaddedTrainingBatch } from './trajectory/pad-training-batch.js';
export type { Trajectory, TrajectorySequence, TurnRecord } from './trajectory/trajectory.js';
export type { RolloutTokenizer } from './trajectory/rollout-tokenizer.js';

// The rollout loop: concurrency, dynamic filtering with refill, partial rollout, JSONL, eval.
export { createRolloutRunner } from './loop/rollout-runner.js';
export type {
  RolloutRunner,
  RolloutRunnerOptions,
  RolloutStepResult,
} from './loop/rollout-runner.js';
export { isUniformGroup } from './loop/dynamic-filter.js';
export { summariseRollout } from './loop/rollout-metrics.js';
export type { RolloutMetrics } from './loop/rollout-metrics.js';
export { writeRolloutsJsonl } from './loop/write-rollouts-jsonl.js';
export type { RolloutRecord } from './loop/write-rollouts-jsonl.js';

// Example envs (also loadable by path through rollout.env_path).
export * as calculatorEnv from './envs/calculator-env.js';
export * as countdownEnv from './envs/countdown-env.js';
export * as arithmeticEnv from './envs/arithmetic-env.js';
export { evaluateExpression } from './envs/evaluate-expression.js';

// rl2 serve: a checkpoint behind SGLang's native API and the OpenAI API.
export {
  followServeModel,
  parseServeDtype,
  resolveServeModel,
  serveModel,
} from './server/serve-model.js';
export type { ServedModel, ServeModelOptions } from './server/serve-model.js';
export type { ServedTokenizer } from './server/server-context.js';
export type { GeneratedToken, TokenLogprob } from './inference/rollout-engine.js';
