export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';
// The tensor engine keeps its own curated list in engine/index.ts.
export * from './engine/index.js';

export { parseModelConfig, SUPPORTED_ARCHITECTURES } from './config/model-config.js';
export type { ModelConfig, ModelFamily, ModelHead, RopeScaling } from './config/model-config.js';
export { parseGenerationConfig } from './config/generation-config.js';
export type { GenerationConfig } from './config/generation-config.js';

export type { HostTensor } from './checkpoint/host-tensor.js';
export { floatToBf16Bits, floatToHalfBits, halfToFloat, safetensorsDtypeOf, TORCH_DTYPES } from './checkpoint/float-formats.js';
export type { SafetensorsDtype, TorchDtype } from './checkpoint/float-formats.js';
export type { SafetensorsHeader, TensorEntry, TensorSpec } from './checkpoint/safetensors-header.js';
export { parseSafetensors, SafetensorsReader } from './checkpoint/safetensors-reader.js';
export { PT_METADATA, SafetensorsWriter, serializeSafetensors } from './checkpoint/safetensors-writer.js';
export { DEFAULT_MAX_SHARD_SIZE, parseShardSize, planShards } from './checkpoint/shard-plan.js';
export type { ShardPlan } from './checkpoint/shard-plan.js';
export { commitDir, recoverInterruptedSave, tempDirBeside, writeDirAtomic } from './checkpoint/atomic-dir.js';
export { CheckpointWriter, INDEX_FILE } from './checkpoint/checkpoint-writer.js';
export type { CheckpointFormat } from './checkpoint/checkpoint-writer.js';
export { CheckpointReader, readCheckpointWeights, readJsonFile } from './checkpoint/checkpoint-reader.js';
export { resolveModelDir } from './checkpoint/resolve-model-dir.js';
export { loadModel, readGenerationConfig, readModelConfig, withHead } from './checkpoint/load-checkpoint.js';
export type { LoadedModel, LoadModelOptions } from './checkpoint/load-checkpoint.js';
export { checkpointDtype, saveCheckpoint } from './checkpoint/save-checkpoint.js';
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
