// @rl2/engine: fast CPU training for any TensorFlow.js program.

// Start here: choose, start and log the tfjs backend (call once, before building tensors).
export { ENGINE_BACKENDS, initEngine } from './init-engine.js';
export type {
  EngineBackend,
  EngineBackendChoice,
  EngineInfo,
  EngineOptions,
} from './init-engine.js';
export { EngineError } from './errors.js';
export type { EngineErrorCode } from './errors.js';

// Training ops with one fused kernel on `native` and the stock composite ops elsewhere.
export { softmaxCrossEntropy } from './softmax-cross-entropy.js';
export { adamWInPlace, adamWUpdate, scaleInPlace } from './fused/fused-adamw.js';
export { sumOfSquares, weightedSumOfSquares } from './fused/sum-of-squares.js';
export type { AdamWStep } from './fused/fused-adamw.js';
export { freeDisposedBuffers } from './free-disposed.js';
export {
  bufferPoolStats,
  type BufferPoolStats,
  resetBufferPool,
  trimBufferPool,
} from './buffer-pool.js';
export { onHostBackend, readsSynchronously, readValuesNow } from './device-reads.js';
// Reads inside a pass that waited for a GPU (host collectives under tensor / context parallelism).
export { blockingReads } from './webgpu/blocking-read.js';
// In-place writes (which keep a tensor's dataId), for copies made from a tensor's values.
export { writeCount } from './write-count.js';

// Fused decoder-layer kernels: each returns undefined when the active backend lacks it, so the
// caller runs its composite ops instead (how @rl2/models' layers use them).
export { fusedRmsNorm } from './fused/fused-rms-norm.js';
export { fusedSwiGlu } from './fused/fused-swiglu.js';
export { fusedRotary } from './fused/fused-rotary.js';
export { fusedAttention } from './fused/fused-attention.js';
export { flashAttention, hasFlashAttention } from './fused/fused-flash-attention.js';
export { hasLogprobStats, logprobStats, logprobStatsGrad } from './fused/fused-logprob-stats.js';

// Products with frozen 16-bit weights (a LoRA base kept as stored), forward and input gradient.
export {
  FROZEN_LINEAR,
  frozenInputGrad,
  frozenLinear,
  frozenRows,
  hasFrozenLinear,
} from './fused/frozen-linear.js';
export type { FrozenMatrix } from './fused/frozen-linear.js';

// Decoding as one native call per step (or per layer) over an append-friendly KV cache
// (undefined off `native`).
export { decodeKernels, prepareDecodeModel, WEIGHT_DTYPES } from './fused/fused-decode.js';
export type {
  DecodeCaches,
  PagedDecodeCaches,
  DecodeDims,
  DecodeKernels,
  DecodeLayerWeights,
  DecodeMatrix,
  DecodeModelWeights,
  PreparedDecodeModel,
  WeightDtype,
} from './fused/fused-decode.js';
// How many kernels ran: the figure to watch per decode step or training step.
export { kernelDispatches } from './dispatch-counter.js';
// Per-kernel self time per phase of a training step (the `pnpm bench train-profile` breakdown).
export { setProfilePhase, startKernelProfile, stopKernelProfile } from './kernel-profile.js';
export type { KernelProfile, KernelTiming } from './kernel-profile.js';

// Lower level: register the native backend yourself, or see why the C addon did not load.
export { NATIVE_BACKEND, registerNativeBackend } from './native-backend.js';
export { loadNativeAddon } from './native-addon.js';
export type { NativeAddon, NativeLoad } from './native-addon.js';
