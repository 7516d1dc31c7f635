// Rotary position embedding (rotate-half layout) as a WGSL program on tfjs's webgpu backend,
// under the fused kernel's name (`Rl2Rotary`, forward and transposed by `attrs.backward`) so
// `fusedRotary` takes it there: one pass over x [N, heads, d], where the composite is a
// [N*heads, d] x [d, d] rotation matmul and three elementwise ops, and the same again backward.
import type { KernelConfig, KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { ROTARY } from '../fused/fused-rotary.js';
import type { Program, WebGpuBackendLike } from './wgsl-program.js';

const THREADS = 64;

/**
 * The native kernel's arithmetic (native/fused-rotary.c), one thread per pair (x1[j], x2[j]) of a
 * row, j < d/2, c and s the row's position's cos and sin [d]:
 * forward  y1 = x1 c1 - x2 s1,  y2 = x2 c2 + x1 s2;
 * backward dx1 = dy1 c1 + dy2 s2,  dx2 = dy2 c2 - dy1 s1 (the transposed rotation).
 */
const PAIRS = {
  forward: `
    result[at] = a * cs[pos] - b * sn[pos];
    result[at + half] = b * cs[pos + half] + a * sn[pos + half];`,
  backward: `
    result[at] = a * cs[pos] + b * sn[pos + half];
    result[at + half] = b * cs[pos + half] - a * sn[pos];`,
};

function rotaryProgram(backward: boolean, shape: number[], pairs: number): Program {
  return {
    variableNames: ['xs', 'cs', 'sn'],
    outputShape: shape,
    shaderKey: backward ? 'rl2RotaryBack' : 'rl2Rotary',
    dispatchLayout: { x: shape.map((_, i) => i) },
    dispatch: [Math.ceil(pairs / THREADS), 1, 1],
    workgroupSize: [THREADS, 1, 1],
    uniforms: 'pairs : i32, heads : i32, half : i32,',
    getUserCode: () => `
      fn main(i : i32) {
        if (i >= uniforms.pairs) { return; }
        let half = uniforms.half;
        let row = i / half;
        let j = i - row * half;
        let at = row * 2 * half + j;
        let pos = (row / uniforms.heads) * 2 * half + j;
        let a = xs[at];
        let b = xs[at + half];
        ${backward ? PAIRS.backward : PAIRS.forward}
      }`,
  };
}

/** x (dy when `attrs.backward`) [N, heads, d], cos and sin [N, 1, d]. */
const rotary: KernelFunc = ({ inputs, backend, attrs }) => {
  const { x, cos, sin } = inputs as { x: TensorInfo; cos: TensorInfo; sin: TensorInfo };
  const [n, heads, d] = x.shape as [number, number, number];
  if (d % 2) throw new Error(`${ROTARY}: the head size d = ${d} must be even (rotate-half pairs)`);
  const pairs = (n * heads * d) / 2;
  const program = rotaryProgram(attrs!.backward === true, x.shape, pairs);
  return (backend as unknown as WebGpuBackendLike).runWebGPUProgram(
    program,
    [x, cos, sin],
    'float32',
    [
      { type: 'int32', data: [pairs] },
      { type: 'int32', data: [heads] },
      { type: 'int32', data: [d / 2] },
    ],
  );
};

/** The WGSL rotary kernel (`registerWgslKernels` registers it). */
export const ROTARY_KERNELS: KernelConfig[] = [
  { kernelName: ROTARY, backendName: 'webgpu', kernelFunc: rotary },
];
