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
} from './engine/rollout-engine.js';
export { createSGLangEngine, parseGenerateResponse } from './engine/sglang-engine.js';
export type { SGLangEngineOptions } from './engine/sglang-engine.js';
export { createEmbeddedEngine } from './engine/embedded-engine.js';
export type {
  EmbeddedEngineOptions,
  TokenGenerator,
  TokenGeneratorRequest,
  TokenGeneratorResult,
} from './engine/embedded-engine.js';
export { createToyGenerator } from './engine/toy-generator.js';
export type { ToyGeneratorOptions } from './engine/toy-generator.js';
export { backoffDelays } from './engine/backoff.js';
export type { BackoffOptions } from './engine/backoff.js';
export type { BalanceStrategy } from './engine/url-balancer.js';

// An SGLang-compatible HTTP server over any engine (`rl2 serve`).
export { startSGLangServer } from './server/sglang-server.js';
export type { SGLangServer, SGLangServerOptions } from './server/sglang-server.js';
