// Public face of the tensor engine (backend choice and fast kernels); curated list of exports.
export { ENGINE_BACKENDS, initEngine } from './init-engine.js';
export type { EngineBackend, EngineBackendChoice, EngineInfo, EngineOptions } from './init-engine.js';
export { NATIVE_BACKEND, registerNativeBackend } from './native-backend.js';
export { loadNativeAddon } from './native-addon.js';
export { softmaxCrossEntropy } from './softmax-cross-entropy.js';
export { adamWUpdate } from './fused/fused-adamw.js';
export type { AdamWStep } from './fused/fused-adamw.js';
export type { NativeAddon, NativeLoad } from './native-addon.js';
