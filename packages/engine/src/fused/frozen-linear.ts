// Products with a frozen 16-bit weight (a LoRA base kept in its stored bfloat16 / float16): the
// forward x W^T and the input gradient dy W in one native kernel each, W widened a tile at a
// time into float32 for sgemm (native/frozen-linear.c). No weight gradient: W is no tensor.
import {
  customGrad,
  engine,
  type GradSaveFunc,
  type KernelConfig,
  type Tensor,
  type Tensor2D,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { WEIGHT_DTYPES } from './fused-decode.js';
import { hasKernel } from './fused-kernel.js';

export const FROZEN_LINEAR = 'Rl2FrozenLinear';

/** A frozen weight matrix [out, in] kept as its 16-bit bits (row-major, HF layout). */
export interface FrozenMatrix {
  readonly bits: Uint16Array;
  readonly dtype: 'bfloat16' | 'float16';
  readonly shape: readonly [number, number];
}

/** Rows r0 .. r0+n of `w` (a view: no copy), e.g. a vocabulary chunk of an LM head. */
export function frozenRows(w: FrozenMatrix, r0: number, n: number): FrozenMatrix {
  const cols = w.shape[1];
  return { bits: w.bits.subarray(r0 * cols, (r0 + n) * cols), dtype: w.dtype, shape: [n, cols] };
}

/** Whether the active backend multiplies by frozen 16-bit weights (the `native` backend). */
export function hasFrozenLinear(): boolean {
  return hasKernel(FROZEN_LINEAR);
}

/**
 * y [N, out] = x [N, in] W^T with `w` [out, in] frozen 16-bit bits; the gradient flows to `x`
 * only (dx = dy W, the same W). Throws where the backend has no such kernel (see `hasFrozenLinear`).
 */
export function frozenLinear(x: Tensor2D, w: FrozenMatrix): Tensor2D {
  if (!hasFrozenLinear())
    throw new Error(
      `frozenLinear: the ${engine().backendName} backend has no ${FROZEN_LINEAR} kernel; ` +
        'it needs the native backend (engine: native) with the C addon built',
    );
  if (x.shape[1] !== w.shape[1])
    throw new Error(`frozenLinear: x [${x.shape}] does not fit W [${w.shape}] (columns differ)`);
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const xi = args[0] as Tensor2D;
    return {
      value: engine().runKernel(FROZEN_LINEAR, { x: xi }, {
        w,
        transpose: false,
      } as never) as Tensor2D,
      gradFunc: (dy: Tensor) => frozenInputGrad(dy as Tensor2D, w),
    };
  });
  return f(x) as Tensor2D;
}

/** dx [N, in] = dy [N, out] W with `w` [out, in] frozen 16-bit bits (the input gradient of `frozenLinear`). */
export function frozenInputGrad(dy: Tensor2D, w: FrozenMatrix): Tensor2D {
  return engine().runKernel(FROZEN_LINEAR, { x: dy }, { w, transpose: true } as never) as Tensor2D;
}

/** The kernel for `backendName` on the addon: attrs `w` (a FrozenMatrix) and `transpose`. */
export function frozenLinearKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const kernel = asKernelFunc(({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: TensorInfo };
    const { w, transpose } = attrs as unknown as { w: FrozenMatrix; transpose: boolean };
    const xs = f32Values(backend, x);
    if (!xs) throw new Error(`${FROZEN_LINEAR}: needs a float32 input`);
    const [out, inF] = w.shape;
    const rows = x.shape[0]!;
    const y = uninitF32(rows * (transpose ? inF : out));
    addon.frozenLinear(
      xs,
      w.bits,
      WEIGHT_DTYPES.indexOf(w.dtype),
      rows,
      inF,
      out,
      y,
      transpose ? 1 : 0,
    );
    return backend.makeTensorInfo([rows, transpose ? inF : out], 'float32', y);
  });
  return [{ kernelName: FROZEN_LINEAR, backendName, kernelFunc: kernel }];
}
