// @rl2/engine/testing: check a kernel or a backend against another (run the same tfjs
// computation on two backends; central-difference gradients). For tests, never for training.
export { closeness, numericGrad, randomSpec, randomValues, runOn } from './backend-check.js';
export type { RunResult, TensorSpec } from './backend-check.js';
export { nativeForTests } from './native-for-tests.js';
export { webgpuForTests } from './webgpu-for-tests.js';
export type { WebGpuForTests } from './webgpu-for-tests.js';
export {
  parityError,
  parityFailures,
  recordShaderKeys,
  runRecorded,
  valueAndGrads,
  webgpuAgainstNative,
} from './webgpu-parity.js';
export type { Parity, ParityError } from './webgpu-parity.js';
