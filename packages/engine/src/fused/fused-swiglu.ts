// SwiGLU gate (Shazeer 2020, https://arxiv.org/abs/2002.05202): silu(gate) * up as one native
// kernel each way (the composite is sigmoid, two muls forward and ~8 ops backward).
import {
  customGrad,
  engine,
  type GradSaveFunc,
  type KernelConfig,
  type Tensor,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const SWIGLU = 'Rl2SwiGlu';
export const SWIGLU_GRAD = 'Rl2SwiGluGrad';

/**
 * `silu(gate) * up` (same shapes), silu(g) = g sigmoid(g). Gradient with s = sigmoid(g):
 * d/dgate = dy up s (1 + g (1 - s)), d/dup = dy g s. Undefined without the fused kernel.
 */
export function fusedSwiGlu(gate: Tensor, up: Tensor): Tensor | undefined {
  if (!hasKernel(SWIGLU) || gate.dtype !== 'float32' || up.dtype !== 'float32') return undefined;
  if (gate.shape.length !== up.shape.length || gate.shape.some((d, i) => d !== up.shape[i]))
    return undefined;
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const [g, u] = args as Tensor[];
    (args[2] as GradSaveFunc)([g!, u!]);
    return {
      value: engine().runKernel(SWIGLU, { gate: g!, up: u! }, {}) as Tensor,
      gradFunc: (dy: Tensor, saved: Tensor[]) =>
        engine().runKernel(SWIGLU_GRAD, { gate: saved[0]!, up: saved[1]!, dy }, {}) as Tensor[],
    };
  });
  return f(gate, up);
}

/** The forward and backward kernels for `backendName` on the addon. */
export function swiGluKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const forward = asKernelFunc(({ inputs, backend }) => {
    const { gate, up } = inputs as { gate: TensorInfo; up: TensorInfo };
    const g = f32Values(backend, gate);
    const u = f32Values(backend, up);
    if (!g || !u) throw new Error(`${SWIGLU}: needs float32 gate and up`);
    const y = uninitF32(g.length);
    addon.swiglu(g, u, y);
    return backend.makeTensorInfo(gate.shape, 'float32', y);
  });
  const backward = asKernelFunc(({ inputs, backend }) => {
    const { gate, up, dy } = inputs as { gate: TensorInfo; up: TensorInfo; dy: TensorInfo };
    const g = f32Values(backend, gate);
    const u = f32Values(backend, up);
    const d = f32Values(backend, dy);
    if (!g || !u || !d) throw new Error(`${SWIGLU_GRAD}: needs float32 gate, up and dy`);
    const dg = uninitF32(g.length);
    const du = uninitF32(g.length);
    addon.swigluGrad(g, u, d, dg, du);
    return [
      backend.makeTensorInfo(gate.shape, 'float32', dg),
      backend.makeTensorInfo(gate.shape, 'float32', du),
    ];
  });
  return [
    { kernelName: SWIGLU, backendName, kernelFunc: forward },
    { kernelName: SWIGLU_GRAD, backendName, kernelFunc: backward },
  ];
}
