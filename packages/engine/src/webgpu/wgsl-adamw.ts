// AdamW in place as one WGSL pass on tfjs's webgpu backend, under the native kernel's name
// (`Rl2AdamWInPlace`), so the optimizer's `adamWInPlace` takes it there: one dispatch reads
// param, grad, m and v and writes param, m and v over their own buffers, where the composite
// update is ~15 kernels and three new parameter-sized tensors a step.
import type { KernelConfig, KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { ADAMW_IN_PLACE } from '../fused/fused-adamw.js';
import { dispatchInPlace, workgroupsFor } from './wgsl-in-place.js';
import type { WebGpuBackendLike } from './wgsl-program.js';

const THREADS = 64;

/**
 * The native kernel's arithmetic (native/adamw.c): m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2,
 * p' = p (1 - lr wd) - lr (m' / c1) / (sqrt(v' / c2) + eps), c1 and c2 the bias corrections, g the
 * gradient times gs (the clipping factor, applied as it is read: no scaled copy of the gradient).
 */
const ADAMW_WGSL = `
struct Hp { lr : f32, b1 : f32, b2 : f32, eps : f32, wd : f32, c1 : f32, c2 : f32, gs : f32, n : u32, }
@group(0) @binding(0) var<storage, read_write> p : array<f32>;
@group(0) @binding(1) var<storage, read_write> m : array<f32>;
@group(0) @binding(2) var<storage, read_write> v : array<f32>;
@group(0) @binding(3) var<storage, read> g : array<f32>;
@group(0) @binding(4) var<uniform> hp : Hp;

@compute @workgroup_size(${THREADS})
fn main(@builtin(global_invocation_id) id : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>) {
  let i = id.y * groups.x * ${THREADS}u + id.x;
  if (i >= hp.n) { return; }
  let gi = g[i] * hp.gs;
  let mi = hp.b1 * m[i] + (1.0 - hp.b1) * gi;
  let vi = hp.b2 * v[i] + (1.0 - hp.b2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] = p[i] * (1.0 - hp.lr * hp.wd) - hp.lr * (mi * (1.0 / hp.c1)) / (sqrt(vi * (1.0 / hp.c2)) + hp.eps);
}`;

/** The eight floats of Hp: the gradient's scale is 1 unless given. */
const hpOf = (hp: number[]) => [...hp.slice(0, 7), hp[7] ?? 1];

/** attrs.hp = [lr, b1, b2, eps, wd, c1, c2, gradScale?] (as the native kernel); returns a scalar 0 to dispose. */
const inPlace: KernelFunc = ({ inputs, backend, attrs }) => {
  const { param, grad, m, v } = inputs as Record<string, TensorInfo>;
  const n = param!.shape.reduce((a, b) => a * b, 1);
  dispatchInPlace(backend, {
    key: 'rl2AdamWInPlace',
    code: ADAMW_WGSL,
    writes: [param!, m!, v!],
    reads: [grad!],
    uniforms: [
      ...hpOf(attrs!.hp as number[]).map((x) => ({ type: 'float32' as const, data: [x] })),
      { type: 'uint32', data: [n] },
    ],
    workgroups: workgroupsFor(n, THREADS),
  });
  return (backend as unknown as WebGpuBackendLike).makeTensorInfo(
    [],
    'float32',
    new Float32Array(1),
  );
};

/** The WGSL AdamW kernel (`registerWgslKernels` registers it). */
export const ADAMW_KERNELS: KernelConfig[] = [
  { kernelName: ADAMW_IN_PLACE, backendName: 'webgpu', kernelFunc: inPlace },
];
