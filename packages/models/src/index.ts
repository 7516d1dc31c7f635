// @rl2/models: Llama / Qwen2 / Qwen3 decoders on TensorFlow.js with Hugging Face checkpoints.
// The tensor engine they run on (initEngine, native kernels, fused ops) is @rl2/engine.

// Errors: every message names the file, tensor or config key and what to do.
export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';

// Hugging Face folders (or hub ids) in and out: config.json, generation_config.json and the
// safetensors, read tensor by tensor, saved as save_pretrained does (shards, atomically).
export { resolveModelDir } from './checkpoint/resolve-model-dir.js';
export { loadModel, readModelConfig } from './checkpoint/load-checkpoint.js';
export { checkTokenizerFits } from './checkpoint/check-tokenizer-fits.js';
export type { LoadedModel, LoadModelOptions } from './checkpoint/load-checkpoint.js';
export { saveModel } from './checkpoint/save-model.js';
export type { SaveModelOptions } from './checkpoint/save-model.js';
export { parseModelConfig, SUPPORTED_ARCHITECTURES } from './config/model-config.js';
export type { ModelConfig, ModelFamily, ModelHead, RopeScaling } from './config/model-config.js';
export { parseGenerationConfig } from './config/generation-config.js';
export type { GenerationConfig } from './config/generation-config.js';

// Checkpoint files one tensor at a time (any size): readers and writers of HF folders and of
// safetensors files, shard sizes, torch dtypes; bytes already in memory for small files.
export { CheckpointReader } from './checkpoint/checkpoint-reader.js';
export { CheckpointWriter } from './checkpoint/checkpoint-writer.js';
export type { CheckpointFormat } from './checkpoint/checkpoint-writer.js';
export { parseSafetensors, SafetensorsReader } from './checkpoint/safetensors-reader.js';
export { SafetensorsWriter, serializeSafetensors } from './checkpoint/safetensors-writer.js';
export type {
  SafetensorsHeader,
  TensorEntry,
  TensorSpec,
} from './checkpoint/safetensors-header.js';
export { DEFAULT_MAX_SHARD_SIZE, parseShardSize, planShards } from './checkpoint/shard-plan.js';
export type { ShardPlan } from './checkpoint/shard-plan.js';
export type { HostTensor } from './checkpoint/host-tensor.js';
export { TORCH_DTYPES } from './checkpoint/float-formats.js';
export type { SafetensorsDtype, TorchDtype } from './checkpoint/float-formats.js';

// Atomic saves: a folder, file or link is written beside its target and renamed into place, so
// no reader sees half of it; removeStaleSaves cleans a run folder of what killed saves left.
export { removeStaleSaves, tempPathBeside, writeDirAtomic } from './atomic/atomic-dir.js';
export { updateLink, writeFileAtomic } from './atomic/atomic-write.js';

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
export { createParamMap, disposeParams } from './model/param-map.js';
export type { ParamMap } from './model/param-map.js';
export { paramShapes } from './model/param-shapes.js';

// LoRA (PEFT's names and init): adapters on the projections, the base frozen, merged weights.
export {
  LORA_TARGET_MODULES,
  isLoraParam,
  loraModules,
  loraScale,
  savedModuleParams,
} from './lora/lora-spec.js';
export type { LoraModule, LoraSpec, LoraTargetModule } from './lora/lora-spec.js';
export { initLoraParams, loraParamsFromHost } from './lora/lora-params.js';
export { attachLora, mergeLora } from './lora/lora-model.js';
export { attachTensorParallelLora } from './lora/attach-tensor-parallel-lora.js';
export {
  frozenAwareLinear,
  frozenRowsGather,
  isFrozenMatrixName,
} from './frozen/frozen-weights.js';
export type { FrozenWeights } from './frozen/frozen-weights.js';
export type { LocalShape, LoraModel } from './lora/lora-model.js';
export type { LoraDropout } from './lora/lora-linear.js';
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  peftLoraConfig,
  readPeftAdapter,
  writePeftAdapter,
} from './lora/peft-adapter.js';
export type { PeftAdapter, PeftLoraConfig } from './lora/peft-adapter.js';

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
export {
  defaultWeightDtype,
  GENERATION_WEIGHT_DTYPES,
  parseWeightDtype,
} from './generation/generation-weights.js';
export type { Generator, GeneratorOptions, GeneratorStats } from './generation/generator.js';
export type {
  FinishReason,
  GenerationRequest,
  GenerationResult,
} from './generation/generation-request.js';
export type { SamplingParams } from './generation/sample-token.js';
export type { BatchStepper, SamplingRow } from './generation/batch-stepper.js';
export type { KvCacheLayout } from './generation/kv-decoder.js';

// Tensor-parallel generation: the lead's stepper, the followers' loop, a rank's shards.
export {
  followTensorParallel,
  tensorParallelLead,
  tensorParallelStepper,
} from './generation/tensor-parallel-generation.js';
export type {
  TensorParallelLead,
  TensorParallelStepper,
} from './generation/tensor-parallel-generation.js';
export { loadTensorParallelModel } from './checkpoint/load-tensor-parallel-model.js';

// Streaming and top logprobs of the generator (rl2 serve's OpenAI API).
export type { GeneratedToken } from './generation/generation-request.js';
export type { SampledToken, TokenLogprob } from './generation/sample-token.js';
