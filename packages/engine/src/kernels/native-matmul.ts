// BatchMatMul and _FusedMatMul through OpenBLAS cblas_sgemm, for every transpose combination
// and batch layout: A [...batchA, M, K] (or [..., K, M] with transposeA), B likewise, batch dims
// broadcast when one side has a single matrix. Other broadcasts go to the stock kernel.
import { broadcast_util, getKernel, type KernelFunc, type TensorInfo } from '@tensorflow/tfjs-core';
import type { NativeAddon } from '../native-addon.js';
import {
  asKernelFunc,
  type CpuKernelArgs,
  f32Values,
  type NativeKernelOverride,
  sizeOf,
  uninitF32,
} from './native-kernel.js';

/** Runs op(a) @ op(b) natively; undefined when the layout needs the stock kernel. */
export function nativeMatMul(
  addon: NativeAddon,
  args: CpuKernelArgs,
  transposeA: boolean,
  transposeB: boolean,
): TensorInfo | undefined {
  const { a, b } = args.inputs;
  const av = f32Values(args.backend, a);
  const bv = f32Values(args.backend, b);
  if (!a || !b || !av || !bv || a.shape.length < 2 || b.shape.length < 2) return undefined;
  const ra = a.shape.length;
  const rb = b.shape.length;
  const m = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  const k = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  const kb = transposeB ? b.shape[rb - 1] : b.shape[rb - 2];
  const n = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  if (k !== kb) return undefined; // the stock kernel throws tfjs's own message
  let outer: number[];
  try {
    outer = broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
  } catch {
    return undefined;
  }
  const batch = sizeOf(outer);
  const batchA = sizeOf(a.shape.slice(0, -2));
  const batchB = sizeOf(b.shape.slice(0, -2));
  if ((batchA !== batch && batchA !== 1) || (batchB !== batch && batchB !== 1)) return undefined;
  const out = uninitF32(batch * m * n);
  if (batch > 0) {
    addon.gemm(
      transposeA,
      transposeB,
      batch,
      m,
      n,
      k,
      av,
      batchA === 1 ? 0 : m * k,
      bv,
      batchB === 1 ? 0 : k * n,
      out,
    );
  }
  return args.backend.makeTensorInfo([...outer, m, n], 'float32', out);
}

export const batchMatMulOverride: NativeKernelOverride = {
  kernelName: 'BatchMatMul',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { transposeA, transposeB } = (args.attrs ?? {}) as {
        transposeA?: boolean;
        transposeB?: boolean;
      };
      return (
        nativeMatMul(addon, args, !!transposeA, !!transposeB) ??
        (stock(args as never) as TensorInfo)
      );
    }),
};

/** tfjs fused activation name -> the kernel that applies it (prelu/leakyrelu take an extra input/attr). */
const ACTIVATION_KERNEL: Record<string, string> = {
  relu: 'Relu',
  relu6: 'Relu6',
  elu: 'Elu',
  sigmoid: 'Sigmoid',
  prelu: 'Prelu',
  leakyrelu: 'LeakyRelu',
};

/** Calls kernel `name` registered for the backend the call runs on (so Add/Relu are the native ones too). */
function callKernel(backendName: string, name: string, args: CpuKernelArgs): TensorInfo {
  const kernel = getKernel(name, backendName);
  if (!kernel)
    throw new Error(`rl2 engine: kernel ${name} is not registered for backend ${backendName}`);
  return (kernel.kernelFunc as KernelFunc)(args as never) as TensorInfo;
}

/** _FusedMatMul = matmul, + bias, then activation; each step on the native kernels. */
export function fusedMatMulOverride(backendName: string): NativeKernelOverride {
  return {
    kernelName: '_FusedMatMul',
    make: (addon, stock) =>
      asKernelFunc((args) => {
        const attrs = (args.attrs ?? {}) as {
          transposeA?: boolean;
          transposeB?: boolean;
          activation?: string;
          leakyreluAlpha?: number;
        };
        const { bias, preluActivationWeights } = args.inputs;
        const product = nativeMatMul(addon, args, !!attrs.transposeA, !!attrs.transposeB);
        if (!product) return stock(args as never) as TensorInfo;
        const { backend } = args;
        let current = product;
        if (bias) {
          const added = callKernel(backendName, 'Add', {
            inputs: { a: current, b: bias },
            backend,
          });
          backend.disposeIntermediateTensorInfo(current);
          current = added;
        }
        const activation = attrs.activation ?? 'linear';
        if (activation !== 'linear') {
          const name = ACTIVATION_KERNEL[activation];
          if (!name)
            throw new Error(`rl2 engine: _FusedMatMul activation "${activation}" is not supported`);
          const activated = callKernel(backendName, name, {
            inputs:
              name === 'Prelu' ? { x: current, alpha: preluActivationWeights } : { x: current },
            backend,
            attrs: name === 'LeakyRelu' ? { alpha: attrs.leakyreluAlpha ?? 0.2 } : {},
          });
          backend.disposeIntermediateTensorInfo(current);
          current = activated;
        }
        return current;
      }),
  };
}
