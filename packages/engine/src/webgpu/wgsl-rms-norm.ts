// RMSNorm forward and backward as WGSL programs on tfjs's webgpu backend, registered under the
// fused kernels' names (`Rl2RmsNorm`, `Rl2RmsNormGrad`) so `fusedRmsNorm` takes them there: the
// backward keeps only x and w (the composite version saves five [N, H] intermediates for its
// fifteen-odd ops) and runs three passes over [N, H].
import {
  getKernel,
  type KernelConfig,
  type KernelFunc,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { RMS_NORM, RMS_NORM_GRAD } from '../fused/fused-rms-norm.js';

import type { Program, WebGpuBackendLike } from './wgsl-program.js';

/** Threads of one row's workgroup: a power of two (the tree reductions halve it). */
const rowThreads = (h: number) => (h >= 4096 ? 256 : 64);

/**
 * Sums `value` over the workgroup's threads into `buf[0]`, visible to all after the call
 * (WGSL text; `buf` holds WG floats).
 */
const workgroupSum = (value: string, buf: string) => `
  ${buf}[tid] = ${value};
  workgroupBarrier();
  for (var size = WG / 2; size > 0; size = size >> 1) {
    if (tid < size) { ${buf}[tid] = ${buf}[tid] + ${buf}[tid + size]; }
    workgroupBarrier();
  }`;

/** One workgroup per row of x [N, H]: each thread strides over the row's columns. */
function rowProgram(
  key: string,
  variableNames: string[],
  outputShape: number[],
  rows: number,
  h: number,
  body: string,
): Program {
  const wg = rowThreads(h);
  return {
    variableNames,
    outputShape,
    shaderKey: `${key}_${wg}`,
    dispatchLayout: { x: outputShape.map((_, i) => i) },
    dispatch: [rows, 1, 1],
    workgroupSize: [wg, 1, 1],
    uniforms: 'eps : f32, rows : i32, cols : i32,',
    getUserCode: () => `
      const WG = ${wg};
      var<workgroup> buf : array<f32, ${wg}>;
      var<workgroup> buf2 : array<f32, ${wg}>;
      fn main(index : i32) {
        let tid = i32(localId.x);
        let cols = uniforms.cols;
        // padded workgroups (a reshaped dispatch) recompute the last row and write nothing
        let slot = index / WG;
        let row = min(slot, uniforms.rows - 1);
        let base = row * cols;
        ${body}
      }`,
  };
}

/** y = w x r with r = 1 / sqrt(mean(x^2) + eps), one pass over each row. */
const FORWARD = `
  var s = 0.0;
  for (var c = tid; c < cols; c += WG) { let v = xs[base + c]; s += v * v; }
  ${workgroupSum('s', 'buf')}
  let r = inverseSqrt(buf[0] / f32(cols) + uniforms.eps);
  if (slot < uniforms.rows) {
    for (var c = tid; c < cols; c += WG) { result[base + c] = xs[base + c] * r * ws[c]; }
  }`;

/** dx = r g - r^3 x mean(g x) with g = dy w (the same as r (g - x̂ mean(g x̂)), x̂ = x r). */
const BACKWARD_DX = `
  var s = 0.0;
  var gx = 0.0;
  for (var c = tid; c < cols; c += WG) {
    let v = xs[base + c];
    s += v * v;
    gx += dys[base + c] * ws[c] * v;
  }
  ${workgroupSum('s', 'buf')}
  ${workgroupSum('gx', 'buf2')}
  let r = inverseSqrt(buf[0] / f32(cols) + uniforms.eps);
  let m = r * r * r * buf2[0] / f32(cols);
  if (slot < uniforms.rows) {
    for (var c = tid; c < cols; c += WG) {
      result[base + c] = r * dys[base + c] * ws[c] - m * xs[base + c];
    }
  }`;

/** r of each row [N] (what the dw pass scales x by). */
const ROW_SCALE = `
  var s = 0.0;
  for (var c = tid; c < cols; c += WG) { let v = xs[base + c]; s += v * v; }
  ${workgroupSum('s', 'buf')}
  if (tid == 0 && slot < uniforms.rows) { result[row] = inverseSqrt(buf[0] / f32(cols) + uniforms.eps); }`;

/** Rows each thread of the dw pass sums (its partial sums are then added by tfjs's Sum). */
const DW_CHUNK = 256;

/** dw's partial sums [chunks, H] of dy x r over each chunk of DW_CHUNK rows: a thread per (chunk, column). */
function dwProgram(chunks: number, h: number): Program {
  const blocks = Math.ceil(h / 64);
  return {
    variableNames: ['xs', 'dys', 'scales'],
    outputShape: [chunks, h],
    shaderKey: `rl2RmsNormDw_${DW_CHUNK}`,
    dispatchLayout: { x: [0, 1] },
    dispatch: [blocks, chunks, 1],
    workgroupSize: [64, 1, 1],
    uniforms: 'rows : i32, cols : i32, stride : i32, chunks : i32,',
    // (sizes are uniforms, not constants: tfjs caches a pipeline per shaderKey and input ranks)
    getUserCode: () => `
      fn main(index : i32) {
        let cols = uniforms.cols;
        let col = index % uniforms.stride;
        let chunk = index / uniforms.stride;
        if (col >= cols || chunk >= uniforms.chunks) { return; }
        var acc = 0.0;
        let end = min(uniforms.rows, (chunk + 1) * ${DW_CHUNK});
        for (var r = chunk * ${DW_CHUNK}; r < end; r++) {
          acc += dys[r * cols + col] * xs[r * cols + col] * scales[r];
        }
        result[chunk * cols + col] = acc;
      }`,
  };
}

const shapeOf = (x: TensorInfo) => x.shape as [number, number];

const forward: KernelFunc = ({ inputs, backend, attrs }) => {
  const { x, weight } = inputs as { x: TensorInfo; weight: TensorInfo };
  const [rows, h] = shapeOf(x);
  const gpu = backend as unknown as WebGpuBackendLike;
  const program = rowProgram('rl2RmsNorm', ['xs', 'ws'], [rows, h], rows, h, FORWARD);
  return gpu.runWebGPUProgram(program, [x, weight], 'float32', [
    { type: 'float32', data: [attrs!.eps as number] },
    { type: 'int32', data: [rows] },
    { type: 'int32', data: [h] },
  ]);
};

const backward: KernelFunc = ({ inputs, backend, attrs }) => {
  const { x, weight, dy } = inputs as { x: TensorInfo; weight: TensorInfo; dy: TensorInfo };
  const [rows, h] = shapeOf(x);
  const gpu = backend as unknown as WebGpuBackendLike;
  const uniforms = [
    { type: 'float32' as const, data: [attrs!.eps as number] },
    { type: 'int32' as const, data: [rows] },
    { type: 'int32' as const, data: [h] },
  ];
  const dxProgram = rowProgram(
    'rl2RmsNormDx',
    ['xs', 'ws', 'dys'],
    [rows, h],
    rows,
    h,
    BACKWARD_DX,
  );
  const dx = gpu.runWebGPUProgram(dxProgram, [x, weight, dy], 'float32', uniforms);
  const scaleProgram = rowProgram('rl2RmsNormScale', ['xs'], [rows], rows, h, ROW_SCALE);
  const scales = gpu.runWebGPUProgram(scaleProgram, [x], 'float32', uniforms);
  const chunks = Math.ceil(rows / DW_CHUNK);
  const partial = gpu.runWebGPUProgram(dwProgram(chunks, h), [x, dy, scales], 'float32', [
    { type: 'int32', data: [rows] },
    { type: 'int32', data: [h] },
    { type: 'int32', data: [Math.ceil(h / 64) * 64] },
    { type: 'int32', data: [chunks] },
  ]);
  gpu.disposeData(scales.dataId);
  const sum = getKernel('Sum', 'webgpu')!.kernelFunc;
  const dw = sum({ inputs: { x: partial }, backend, attrs: { axis: [0], keepDims: false } });
  gpu.disposeData(partial.dataId);
  return [dx, dw as TensorInfo];
};

/** The WGSL RMSNorm kernels (`registerWgslKernels` registers them). */
export const RMS_NORM_KERNELS: KernelConfig[] = [
  { kernelName: RMS_NORM, backendName: 'webgpu', kernelFunc: forward },
  { kernelName: RMS_NORM_GRAD, backendName: 'webgpu', kernelFunc: backward },
];
