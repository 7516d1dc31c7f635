// Rotary position embedding applied in one native pass (the composite is a [N*heads, d] x
// [d, d] rotation matmul plus three elementwise ops, and the same again backward).
import {
  customGrad,
  engine,
  type GradSaveFunc,
  type KernelConfig,
  type Tensor,
  type Tensor3D,
  type TensorInfo,
  zerosLike,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const ROTARY = 'Rl2Rotary';

/**
 * RoPE (Su et al. 2021, https://arxiv.org/abs/2104.09864), rotate-half layout as HF:
 * `x cos + rotate_half(x) sin`, rotate_half(x) = [-x2, x1]; x [N, heads, d], cos/sin [N, 1, d].
 * The gradient is the transposed rotation (the same kernel with `backward`): dx1 = dy1 c1 + dy2 s2,
 * dx2 = dy2 c2 - dy1 s1. cos/sin are constants (zero gradient). Undefined without the kernel.
 */
export function fusedRotary(x: Tensor3D, cos: Tensor3D, sin: Tensor3D): Tensor3D | undefined {
  if (!hasKernel(ROTARY) || x.dtype !== 'float32') return undefined;
  const [n, , d] = x.shape;
  if (
    cos.shape[0] !== n ||
    cos.shape[2] !== d ||
    cos.shape[1] !== 1 ||
    sin.shape.some((s, i) => s !== cos.shape[i])
  )
    return undefined;
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const [xi, c, s] = args as Tensor[];
    (args[3] as GradSaveFunc)([c!, s!]);
    return {
      value: engine().runKernel(
        ROTARY,
        { x: xi!, cos: c!, sin: s! },
        { backward: false },
      ) as Tensor,
      gradFunc: (dy: Tensor, saved: Tensor[]) => [
        engine().runKernel(
          ROTARY,
          { x: dy, cos: saved[0]!, sin: saved[1]! },
          { backward: true },
        ) as Tensor,
        zerosLike(saved[0]!),
        zerosLike(saved[1]!),
      ],
    };
  });
  return f(x, cos, sin) as Tensor3D;
}

/** The kernel (forward and transposed) for `backendName` on the addon. */
export function rotaryKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const kernelFunc = asKernelFunc(({ inputs, backend, attrs }) => {
    const { x, cos, sin } = inputs as { x: TensorInfo; cos: TensorInfo; sin: TensorInfo };
    const xv = f32Values(backend, x);
    const c = f32Values(backend, cos);
    const s = f32Values(backend, sin);
    if (!xv || !c || !s) throw new Error(`${ROTARY}: needs float32 x, cos and sin`);
    const [n, heads, d] = x.shape as [number, number, number];
    const out = uninitF32(xv.length);
    addon.rotary(xv, c, s, n, heads, d, attrs!.backward === true, out);
    return backend.makeTensorInfo(x.shape, 'float32', out);
  });
  return [{ kernelName: ROTARY, backendName, kernelFunc }];
}
