// @rl2/models: Llama / Qwen2 / Qwen3 decoders on TensorFlow.js with Hugging Face checkpoints.
// The tensor engine they run on (initEngine, native kernels, fused ops) is @rl2/engine.

// Errors: every message names the file, tensor or config key and what to do.
export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';

// Checkpoints: Hugging Face folders (or hub ids) in and out (config.json, generation_config.json,
// safetensors read tensor by tensor, written in shards of at most max_shard_size, atomically).
export { resolveModelDir } from './checkpoint/resolve-model-dir.js';
export { checkTokenizerFits } from './checkpoint/check-tokenizer-fits.js';
export {
  loadModel,
  readGenerationConfig,
  readModelConfig,
  withHead,
} from './checkpoint/load-checkpoint.js';
export {
  CheckpointReader,
  readCheckpointWeights,
  readJsonFile,
} from './checkpoint/checkpoint-reader.js';
export { CheckpointWriter, INDEX_FILE } from './checkpoint/checkpoint-writer.js';
export type { CheckpointFormat } from './checkpoint/checkpoint-writer.js';
export { parseSafetensors, SafetensorsReader } from './checkpoint/safetensors-reader.js';
export {
  PT_METADATA,
  SafetensorsWriter,
  serializeSafetensors,
} from './checkpoint/safetensors-writer.js';
export type {
  SafetensorsHeader,
  TensorEntry,
  TensorSpec,
} from './checkpoint/safetensors-header.js';
export { DEFAULT_MAX_SHARD_SIZE, parseShardSize, planShards } from './checkpoint/shard-plan.js';
export type { ShardPlan } from './checkpoint/shard-plan.js';
export {
  commitDir,
  recoverInterruptedSave,
  removeStaleSaves,
  tempDirBeside,
  tempPathBeside,
  writeDirAtomic,
} from './checkpoint/atomic-dir.js';
export type { HostTensor } from './checkpoint/host-tensor.js';
export {
  floatToBf16Bits,
  floatToHalfBits,
  halfToFloat,
  safetensorsDtypeOf,
  TORCH_DTYPES,
} from './checkpoint/float-formats.js';
export type { SafetensorsDtype, TorchDtype } from './checkpoint/float-formats.js';
export type { LoadedModel, LoadModelOptions } from './checkpoint/load-checkpoint.js';
export { checkpointDtype, saveCheckpoint } from './checkpoint/save-checkpoint.js';
export type { SaveCheckpointOptions } from './checkpoint/save-checkpoint.js';
export { parseModelConfig, SUPPORTED_ARCHITECTURES } from './config/model-config.js';
export type { ModelConfig, ModelFamily, ModelHead, RopeScaling } from './config/model-config.js';
export { parseGenerationConfig } from './config/generation-config.js';
export type { GenerationConfig } from './config/generation-config.js';

// New random models (Hugging Face init), e.g. for `rl2 init-model` and tests.
export {
  createModelConfigJson,
  initModelCheckpoint,
  initRandomModel,
} from './model/init-random-model.js';
export type { ModelSpec } from './model/init-random-model.js';

// The model, its parameters, and the seams tensor / context parallelism replace.
export { createDecoderModel, lmHeadWeight } from './model/decoder-model.js';
export type {
  DecoderModel,
  DecoderModelOptions,
  EmbeddingFn,
  LogprobHeadFn,
  RowShard,
  RowSplitFn,
} from './model/decoder-model.js';
export type { Linear, LinearFactory, ParamLookup } from './layers/linear.js';
export type { AttentionKernel } from './layers/attention.js';
export { createParamMap, disposeParams, paramsToHost } from './model/param-map.js';
export type { ParamMap } from './model/param-map.js';
export { paramShapes } from './model/param-shapes.js';

// Training forwards on packed rows: hidden states, per-token logprobs / entropy, values, logits.
export { packSequences, segmentIdsFromCuSeqlens } from './model/token-batch.js';
export type { PackedRow, TokenBatch } from './model/token-batch.js';
export { forwardHidden } from './model/forward-hidden.js';
export type { ForwardOptions } from './model/forward-hidden.js';
export { tokenLogits, tokenLogprobs } from './heads/token-logprobs.js';
export type { LogprobOptions } from './heads/token-logprobs.js';
export { tokenValues } from './heads/token-values.js';

// Generation: the continuous-batching KV-cache generator.
export { createGenerator } from './generation/generator.js';
export type { Generator, GeneratorOptions, GeneratorStats } from './generation/generator.js';
export type {
  FinishReason,
  GenerationRequest,
  GenerationResult,
} from './generation/generation-request.js';
export type { SamplingParams } from './generation/sample-token.js';
export type { BatchStepper, SamplingRow } from './generation/batch-stepper.js';

// Tensor-parallel generation: the lead's stepper, the followers' loop, vocab-parallel sampling.
export {
  followTensorParallel,
  tensorParallelStepper,
} from './generation/tensor-parallel-generation.js';
export type { TensorParallelStepper } from './generation/tensor-parallel-generation.js';
export { loadTensorParallelModel } from './checkpoint/load-tensor-parallel-model.js';
export { sampleVocabParallel, vocabParallelRow } from './generation/vocab-parallel-sampling.js';
export type { VocabParallelRow } from './generation/vocab-parallel-sampling.js';

// Streaming and top logprobs of the generator (rl2 serve's OpenAI API).
export type { GeneratedToken } from './generation/generation-request.js';
export type { SampledToken, TokenLogprob } from './generation/sample-token.js';
