// ||t_i||^2 of many tensors (a gradient norm's parts) on tfjs's webgpu backend, under
// `Rl2SumsOfSquares`, so `weightedSumOfSquares` takes it there: each tensor is read once by a
// WGSL reduction that writes its workgroups' partial sums into its row of one small [k, 256]
// buffer, and one more program adds each row, giving [k] on the device for a single read. The
// composite (square, then sum, per tensor) makes a squared copy of every gradient.
import {
  getKernel,
  type KernelConfig,
  type KernelFunc,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { SUMS_OF_SQUARES } from '../fused/sum-of-squares.js';
import { dispatchInPlace } from './wgsl-in-place.js';
import type { Program, WebGpuBackendLike } from './wgsl-program.js';

/** Threads of a workgroup, and the most workgroups (partial sums) one tensor gets: powers of two. */
const WG = 256;
const PARTS = 256;
/** Elements a thread should have to sum before the tensor gets another workgroup. */
const PER_THREAD = 8;

/** The tree sum of `buf` [WG] over the workgroup into buf[0] (WGSL; `tid` the thread's index). */
const TREE_SUM = `
  workgroupBarrier();
  for (var size = ${WG}u / 2u; size > 0u; size = size >> 1u) {
    if (tid < size) { buf[tid] = buf[tid] + buf[tid + size]; }
    workgroupBarrier();
  }`;

/**
 * Workgroup w of tensor `row` sums x[i]^2 over i = w WG + tid, striding by all its workgroups'
 * threads (Kahan-compensated: a thread may add millions of squares), then over the workgroup,
 * and writes parts[row * PARTS + w].
 */
const PARTIALS_WGSL = `
struct U { n : u32, row : u32, }
@group(0) @binding(0) var<storage, read_write> parts : array<f32>;
@group(0) @binding(1) var<storage, read> x : array<f32>;
@group(0) @binding(2) var<uniform> u : U;
var<workgroup> buf : array<f32, ${WG}>;

@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_index) tid : u32, @builtin(workgroup_id) wg : vec3<u32>,
        @builtin(num_workgroups) groups : vec3<u32>) {
  var s = 0.0;
  var lost = 0.0;
  for (var i = wg.x * ${WG}u + tid; i < u.n; i += groups.x * ${WG}u) {
    let y = x[i] * x[i] - lost;
    let t = s + y;
    lost = (t - s) - y;
    s = t;
  }
  buf[tid] = s;
  ${TREE_SUM}
  if (tid == 0u) { parts[u.row * ${PARTS}u + wg.x] = buf[0]; }
}`;

/** The sum of each row of parts [k, PARTS] (unused slots hold 0): one workgroup a row. */
function rowSums(k: number): Program {
  return {
    variableNames: ['parts'],
    outputShape: [k],
    shaderKey: 'rl2SumsOfSquaresRows',
    dispatchLayout: { x: [0] },
    dispatch: [k, 1, 1],
    workgroupSize: [PARTS, 1, 1],
    uniforms: 'rows : i32,',
    getUserCode: () => `
      var<workgroup> buf : array<f32, ${PARTS}>;
      fn main(index : i32) {
        let tid = localIndex;
        let slot = index / ${PARTS};
        let row = min(slot, uniforms.rows - 1);
        buf[tid] = parts[row * ${PARTS} + i32(tid)];
        ${TREE_SUM}
        if (tid == 0u && slot < uniforms.rows) { result[row] = buf[0]; }
      }`,
  };
}

const sizeOf = (t: TensorInfo) => t.shape.reduce((a, b) => a * b, 1);

/** inputs: the k float32 tensors (any shapes, keyed in order); returns [k] float32. */
const sumsOfSquares: KernelFunc = ({ inputs, backend }) => {
  const tensors = Object.values(inputs) as TensorInfo[];
  const k = tensors.length;
  const fill = getKernel('Fill', 'webgpu')!.kernelFunc;
  const parts = fill({
    inputs: {},
    backend,
    attrs: { shape: [k * PARTS], value: 0, dtype: 'float32' },
  }) as TensorInfo;
  tensors.forEach((t, row) => {
    const n = sizeOf(t);
    if (n === 0) return;
    dispatchInPlace(backend, {
      key: 'rl2SumsOfSquaresParts',
      code: PARTIALS_WGSL,
      writes: [parts],
      reads: [t],
      uniforms: [
        { type: 'uint32', data: [n] },
        { type: 'uint32', data: [row] },
      ],
      workgroups: [Math.min(PARTS, Math.ceil(n / (WG * PER_THREAD))), 1],
    });
  });
  const gpu = backend as unknown as WebGpuBackendLike;
  const sums = gpu.runWebGPUProgram(rowSums(k), [parts], 'float32', [{ type: 'int32', data: [k] }]);
  gpu.disposeData(parts.dataId);
  return sums;
};

/** The WGSL sums-of-squares kernel (`registerWgslKernels` registers it). */
export const SUMS_OF_SQUARES_KERNELS: KernelConfig[] = [
  { kernelName: SUMS_OF_SQUARES, backendName: 'webgpu', kernelFunc: sumsOfSquares },
];
