import { type EmbeddedEngineOptions, createEmbeddedEngine } from './embedded-engine.js';
import type { RolloutEngine } from './rollout-engine.js';
import { type SGLangEngineOptions, createSGLangEngine } from './sglang-engine.js';

/** Engine choice by a discriminated `type`: 'embedded' (default in rl2, no server) or 'sglang'. */
export type RolloutEngineConfig =
  | ({ type: 'embedded' } & EmbeddedEngineOptions)
  | ({ type: 'sglang' } & SGLangEngineOptions);

/** Builds the RolloutEngine a config asks for. */
export function createRolloutEngine(config: RolloutEngineConfig): RolloutEngine {
  switch (config.type) {
    case 'embedded':
      return createEmbeddedEngine(config);
    case 'sglang':
      return createSGLangEngine(config);
  }
}
