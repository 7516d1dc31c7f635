// RMSNorm as one native kernel forward and one backward (the composite version is six ops
// forward and about fifteen backward, each a pass over [N, H]).
import {
  customGrad,
  engine,
  type GradSaveFunc,
  reshape,
  type Tensor,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';
import type { KernelConfig } from '@tensorflow/tfjs-core';

export const RMS_NORM = 'Rl2RmsNorm';
export const RMS_NORM_GRAD = 'Rl2RmsNormGrad';

/**
 * RMSNorm (Zhang & Sennrich 2019, https://arxiv.org/abs/1910.07467) over the last axis,
 * `y = w * x / sqrt(mean(x^2) + eps)`, x [..., H], w [H], as one fused kernel with a
 * hand-written gradient: dx = r (dy w - x̂ mean(dy w x̂)), dw = sum over rows of dy x̂,
 * with r = 1/sqrt(mean(x^2) + eps), x̂ = x r. Undefined where the backend has no fused kernel.
 */
export function fusedRmsNorm(x: Tensor, weight: Tensor, eps: number): Tensor | undefined {
  if (!hasKernel(RMS_NORM) || x.dtype !== 'float32' || weight.dtype !== 'float32') return undefined;
  const h = x.shape[x.shape.length - 1]!;
  if (weight.size !== h) return undefined;
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const [xi, wi] = args as Tensor[];
    const save = args[2] as GradSaveFunc;
    save([xi!, wi!]);
    const y = engine().runKernel(
      RMS_NORM,
      { x: reshape(xi!, [-1, h]), weight: wi! },
      { eps },
    ) as Tensor;
    return {
      value: reshape(y, xi!.shape),
      gradFunc: (dy: Tensor, saved: Tensor[]) => {
        const [sx, sw] = saved;
        const [dx, dw] = engine().runKernel(
          RMS_NORM_GRAD,
          { x: reshape(sx!, [-1, h]), weight: sw!, dy: reshape(dy, [-1, h]) },
          { eps },
        ) as Tensor[];
        return [reshape(dx!, sx!.shape), reshape(dw!, sw!.shape)];
      },
    };
  });
  return f(x, weight);
}

/** The forward and backward kernels for `backendName` (a cpu-style backend) on the addon. */
export function rmsNormKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const forward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { x, weight } = inputs as { x: TensorInfo; weight: TensorInfo };
    const xv = f32Values(backend, x);
    const wv = f32Values(backend, weight);
    if (!xv || !wv) throw new Error(`${RMS_NORM}: needs float32 x and weight`);
    const [rows, h] = x.shape as [number, number];
    const y = uninitF32(rows * h);
    addon.rmsNorm(xv, wv, rows, h, attrs!.eps as number, y);
    return backend.makeTensorInfo([rows, h], 'float32', y);
  });
  const backward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { x, weight, dy } = inputs as { x: TensorInfo; weight: TensorInfo; dy: TensorInfo };
    const xv = f32Values(backend, x);
    const wv = f32Values(backend, weight);
    const g = f32Values(backend, dy);
    if (!xv || !wv || !g) throw new Error(`${RMS_NORM_GRAD}: needs float32 x, weight and dy`);
    const [rows, h] = x.shape as [number, number];
    const dx = uninitF32(rows * h);
    const dw = new Float32Array(h);
    addon.rmsNormGrad(xv, wv, g, rows, h, attrs!.eps as number, dx, dw);
    return [
      backend.makeTensorInfo([rows, h], 'float32', dx),
      backend.makeTensorInfo([h], 'float32', dw),
    ];
  });
  return [
    { kernelName: RMS_NORM, backendName, kernelFunc: forward },
    { kernelName: RMS_NORM_GRAD, backendName, kernelFunc: backward },
  ];
}
