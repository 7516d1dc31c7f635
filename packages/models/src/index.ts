export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';
// The tensor engine keeps its own curated list in engine/index.ts.
export * from './engine/index.js';

export { parseModelConfig, SUPPORTED_ARCHITECTURES } from './config/model-config.js';
export type { ModelConfig, ModelFamily, ModelHead, RopeScaling } from './config/model-config.js';
export { parseGenerationConfig } from './config/generation-config.js';
export type { GenerationConfig } from './config/generation-config.js';

export { parseSafetensors, serializeSafetensors } from './checkpoint/safetensors.js';
export type { HostTensor, SafetensorsDtype, SaveDtype } from './checkpoint/safetensors.js';
export {
  loadModel,
  readCheckpointWeights,
  readGenerationConfig,
  readModelConfig,
  withHead,
} from './checkpoint/load-checkpoint.js';
export type { LoadedModel, LoadModelOptions } from './checkpoint/load-checkpoint.js';
export { saveCheckpoint } from './checkpoint/save-checkpoint.js';
export type { SaveCheckpointOptions } from './checkpoint/save-checkpoint.js';

export { denseLinear } from './layers/linear.js';
export type { Linear, LinearFactory, ParamLookup } from './layers/linear.js';
export { groupedQueryAttention, packedCausalMask } from './layers/attention.js';
export type { AttentionKernel } from './layers/attention.js';

export { createDecoderModel, lmHeadWeight } from './model/decoder-model.js';
export type { DecoderModel, DecoderModelOptions, EmbeddingFn, LogprobHeadFn, RowShard, RowSplitFn } from './model/decoder-model.js';
export { createParamMap, disposeParams, paramsToHost, updateParams } from './model/param-map.js';
export type { ParamMap } from './model/param-map.js';
export { paramShapes } from './model/param-shapes.js';
export { forwardHidden } from './model/forward-hidden.js';
export type { ForwardOptions } from './model/forward-hidden.js';
export { packSequences, segmentIdsFromCuSeqlens } from './model/token-batch.js';
export type { PackedRow, TokenBatch } from './model/token-batch.js';

export { tokenLogits, tokenLogprobs } from './heads/token-logprobs.js';
export type { LogprobOptions } from './heads/token-logprobs.js';
export { tokenValues } from './heads/token-values.js';
export { createModelConfigJson, initModelCheckpoint, initRandomModel } from './model/init-random-model.js';
export type { ModelSpec } from './model/init-random-model.js';

export { createGenerator } from './generation/generator.js';
export type { Generator, GeneratorOptions, GeneratorStats } from './generation/generator.js';
export type { FinishReason, GenerationRequest, GenerationResult } from './generation/generation-request.js';
export { sampleToken } from './generation/sample-token.js';
export type { SamplingParams } from './generation/sample-token.js';
export { SeededRng, deriveSeed } from './generation/seeded-rng.js';

// Streaming and top logprobs of the generator (rl2 serve's OpenAI API).
export type { GeneratedToken } from './generation/generation-request.js';
export type { SampledToken, TokenLogprob } from './generation/sample-token.js';
