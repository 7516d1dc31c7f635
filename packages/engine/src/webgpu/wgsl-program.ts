// What the WGSL kernels use of tfjs-backend-webgpu's custom program mechanism (WebGPUProgram and
// runWebGPUProgram), typed structurally so the engine loads without the webgpu package, and
// their registration once the backend has started.
import { getKernel, registerKernel, type TensorInfo } from '@tensorflow/tfjs-core';
import { ADAMW_KERNELS } from './wgsl-adamw.js';
import { FLASH_ATTENTION_KERNELS } from './wgsl-flash-attention.js';
import { LOGPROB_STATS_KERNELS } from './wgsl-logprob-stats.js';
import { RMS_NORM_KERNELS } from './wgsl-rms-norm.js';
import { ROTARY_KERNELS } from './wgsl-rotary.js';
import { SUMS_OF_SQUARES_KERNELS } from './wgsl-sums-of-squares.js';
import { SWIGLU_KERNELS } from './wgsl-swiglu.js';

/**
 * A WGSL program as tfjs-backend-webgpu 4.22 runs it: the user code's `fn main(index : i32)`
 * reads the `variableNames` storage arrays and writes `result`; sizes belong in `uniforms` (the
 * pipeline is cached by `shaderKey` and the inputs' ranks, not their sizes).
 */
export interface Program {
  variableNames: string[];
  outputShape: number[];
  shaderKey: string;
  dispatchLayout: { x: number[] };
  dispatch: [number, number, number];
  workgroupSize: [number, number, number];
  uniforms?: string;
  getUserCode(): string;
}

export interface WebGpuBackendLike {
  runWebGPUProgram(
    program: Program,
    inputs: TensorInfo[],
    dtype: 'float32',
    uniforms?: { type: 'float32' | 'int32'; data: number[] }[],
  ): TensorInfo;
  disposeData(dataId: object): void;
  makeTensorInfo(shape: number[], dtype: 'float32', values?: Float32Array): TensorInfo;
}

/** Registers the WGSL kernels for the webgpu backend (once; after it started). */
export function registerWgslKernels(): void {
  for (const k of [
    ...RMS_NORM_KERNELS,
    ...SWIGLU_KERNELS,
    ...ROTARY_KERNELS,
    ...LOGPROB_STATS_KERNELS,
    ...ADAMW_KERNELS,
    ...SUMS_OF_SQUARES_KERNELS,
    ...FLASH_ATTENTION_KERNELS,
  ])
    if (!getKernel(k.kernelName, k.backendName)) registerKernel(k);
}
