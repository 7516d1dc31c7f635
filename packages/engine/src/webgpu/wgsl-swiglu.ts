// The SwiGLU gate silu(gate) * up as WGSL programs on tfjs's webgpu backend, under the fused
// kernels' names (`Rl2SwiGlu`, `Rl2SwiGluGrad`) so `fusedSwiGlu` takes them there: the backward
// keeps only gate and up ([N, intermediate] each) where the composite saves the sigmoid and the
// products besides, and each direction is one pass per output.
import type { KernelConfig, KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { SWIGLU, SWIGLU_GRAD } from '../fused/fused-swiglu.js';
import type { Program, WebGpuBackendLike } from './wgsl-program.js';

const THREADS = 64;

/** One thread per element of `outputShape`; `value` is the WGSL expression of element i. */
function elementwise(
  key: string,
  variableNames: string[],
  outputShape: number[],
  value: string,
): Program {
  const n = outputShape.reduce((a, b) => a * b, 1);
  return {
    variableNames,
    outputShape,
    shaderKey: key,
    dispatchLayout: { x: outputShape.map((_, i) => i) },
    dispatch: [Math.ceil(n / THREADS), 1, 1],
    workgroupSize: [THREADS, 1, 1],
    uniforms: 'n : i32,',
    getUserCode: () => `
      fn main(i : i32) {
        if (i >= uniforms.n) { return; }
        let g = gs[i];
        let s = 1.0 / (1.0 + exp(-g));
        result[i] = ${value};
      }`,
  };
}

const sizeOf = (t: TensorInfo) => [
  { type: 'int32' as const, data: [t.shape.reduce((a, b) => a * b, 1)] },
];

const forward: KernelFunc = ({ inputs, backend }) => {
  const { gate, up } = inputs as { gate: TensorInfo; up: TensorInfo };
  const program = elementwise('rl2SwiGlu', ['gs', 'us'], gate.shape, 'g * s * us[i]');
  return (backend as unknown as WebGpuBackendLike).runWebGPUProgram(
    program,
    [gate, up],
    'float32',
    sizeOf(gate),
  );
};

/** d/dgate = dy up s (1 + g (1 - s)), d/dup = dy g s with s = sigmoid(g). */
const backward: KernelFunc = ({ inputs, backend }) => {
  const { gate, up, dy } = inputs as { gate: TensorInfo; up: TensorInfo; dy: TensorInfo };
  const gpu = backend as unknown as WebGpuBackendLike;
  const dGate = elementwise(
    'rl2SwiGluDg',
    ['gs', 'us', 'dys'],
    gate.shape,
    'dys[i] * us[i] * s * (1.0 + g * (1.0 - s))',
  );
  const dUp = elementwise('rl2SwiGluDu', ['gs', 'dys'], gate.shape, 'dys[i] * g * s');
  return [
    gpu.runWebGPUProgram(dGate, [gate, up, dy], 'float32', sizeOf(gate)),
    gpu.runWebGPUProgram(dUp, [gate, dy], 'float32', sizeOf(gate)),
  ];
};

/** The WGSL SwiGLU kernels (`registerWgslKernels` registers them). */
export const SWIGLU_KERNELS: KernelConfig[] = [
  { kernelName: SWIGLU, backendName: 'webgpu', kernelFunc: forward },
  { kernelName: SWIGLU_GRAD, backendName: 'webgpu', kernelFunc: backward },
];
