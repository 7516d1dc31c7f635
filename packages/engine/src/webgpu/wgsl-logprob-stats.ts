// Per-token log-prob and entropy of a [N, V] logits block as WGSL programs on tfjs's webgpu
// backend, under the fused kernels' names (`Rl2LogprobStats`, `Rl2LogprobStatsGrad`): the
// log-prob head's one-chunk path then keeps only z for the backward, not exp(z - m), p and
// the composite ops' other [N, V] temporaries. Targets outside [0, V) give NaN (the native
// kernel throws; a shader cannot).
import {
  getKernel,
  type KernelConfig,
  type KernelFunc,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { LOGPROB_STATS, LOGPROB_STATS_GRAD } from '../fused/fused-logprob-stats.js';
import type { Program, WebGpuBackendLike } from './wgsl-program.js';

const WG = 64;

/** One workgroup per row of z: max, then sum exp(z - m) and sum exp(z - m) z; writes (logp, H, lse). */
function statsProgram(rows: number): Program {
  const tree = (buf: string, op: (a: string, b: string) => string) => `
    workgroupBarrier();
    for (var size = ${WG} / 2; size > 0; size = size >> 1) {
      if (tid < size) { ${buf}[tid] = ${op(`${buf}[tid]`, `${buf}[tid + size]`)}; }
      workgroupBarrier();
    }`;
  return {
    variableNames: ['zs', 'ys'],
    outputShape: [rows, 3],
    shaderKey: 'rl2LogprobStats',
    dispatchLayout: { x: [0, 1] },
    dispatch: [rows, 1, 1],
    workgroupSize: [WG, 1, 1],
    uniforms: 'rows : i32, cols : i32,',
    getUserCode: () => `
      var<workgroup> buf : array<f32, ${WG}>;
      var<workgroup> buf2 : array<f32, ${WG}>;
      fn main(index : i32) {
        let tid = i32(localId.x);
        let cols = uniforms.cols;
        let slot = index / ${WG};
        let row = min(slot, uniforms.rows - 1);
        let base = row * cols;
        var m = -3.402823e+38;
        for (var c = tid; c < cols; c += ${WG}) { m = max(m, zs[base + c]); }
        buf[tid] = m;
        ${tree('buf', (a, b) => `max(${a}, ${b})`)}
        let rowMax = buf[0];
        workgroupBarrier();
        var s = 0.0;
        var t = 0.0;
        for (var c = tid; c < cols; c += ${WG}) {
          let z = zs[base + c];
          let e = exp(z - rowMax);
          s += e;
          t += e * z;
        }
        buf[tid] = s;
        buf2[tid] = t;
        ${tree('buf', (a, b) => `${a} + ${b}`)}
        ${tree('buf2', (a, b) => `${a} + ${b}`)}
        if (tid == 0 && slot < uniforms.rows) {
          let lse = rowMax + log(buf[0]);
          let y = ys[row];
          var logp = uniforms.NAN;
          if (y >= 0 && y < cols) { logp = zs[base + y] - lse; }
          result[row * 3] = logp;
          result[row * 3 + 1] = lse - buf2[0] / buf[0];
          result[row * 3 + 2] = lse;
        }
      }`,
  };
}

/** dz = -p (g_logp + g_H (z - lse + H)) inv, plus g_logp inv at the target; p = exp(z - lse). */
function gradProgram(rows: number, cols: number): Program {
  return {
    variableNames: ['zs', 'ys', 'lses', 'stats', 'dys'],
    outputShape: [rows, cols],
    shaderKey: 'rl2LogprobStatsGrad',
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((rows * cols) / WG), 1, 1],
    workgroupSize: [WG, 1, 1],
    uniforms: 'n : i32, cols : i32, inv : f32,',
    getUserCode: () => `
      fn main(i : i32) {
        if (i >= uniforms.n) { return; }
        let row = i / uniforms.cols;
        let col = i - row * uniforms.cols;
        let z = zs[i];
        let lp = z - lses[row];
        let gLogp = dys[row * 2];
        let gEnt = dys[row * 2 + 1];
        var dz = -exp(lp) * (gLogp + gEnt * (lp + stats[row * 2 + 1])) * uniforms.inv;
        if (col == ys[row]) { dz += gLogp * uniforms.inv; }
        result[i] = dz;
      }`,
  };
}

const forward: KernelFunc = ({ inputs, backend }) => {
  const { z, targets } = inputs as { z: TensorInfo; targets: TensorInfo };
  const [rows, cols] = z.shape as [number, number];
  const gpu = backend as unknown as WebGpuBackendLike;
  const packed = gpu.runWebGPUProgram(statsProgram(rows), [z, targets], 'float32', [
    { type: 'int32', data: [rows] },
    { type: 'int32', data: [cols] },
  ]);
  const slice = getKernel('Slice', 'webgpu')!.kernelFunc;
  const part = (begin: number, size: number) =>
    slice({
      inputs: { x: packed },
      backend,
      attrs: { begin: [0, begin], size: [rows, size] },
    }) as TensorInfo;
  const out = [part(0, 2), part(2, 1)];
  gpu.disposeData(packed.dataId);
  return out;
};

const backward: KernelFunc = ({ inputs, backend, attrs }) => {
  const { z, targets, lse, stats, dy } = inputs as Record<string, TensorInfo>;
  const [rows, cols] = z!.shape as [number, number];
  return (backend as unknown as WebGpuBackendLike).runWebGPUProgram(
    gradProgram(rows, cols),
    [z!, targets!, lse!, stats!, dy!],
    'float32',
    [
      { type: 'int32', data: [rows * cols] },
      { type: 'int32', data: [cols] },
      { type: 'float32', data: [attrs!.inv as number] },
    ],
  );
};

/** The WGSL log-prob stats kernels (`registerWgslKernels` registers them). */
export const LOGPROB_STATS_KERNELS: KernelConfig[] = [
  { kernelName: LOGPROB_STATS, backendName: 'webgpu', kernelFunc: forward },
  { kernelName: LOGPROB_STATS_GRAD, backendName: 'webgpu', kernelFunc: backward },
];
