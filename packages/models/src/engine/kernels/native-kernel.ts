// Shared shape of a native kernel override: it gets the addon and the stock tfjs-backend-cpu
// kernel, and returns a kernelFunc that does the fast path or hands the call to the stock
// kernel (other dtypes, rare layouts), so behaviour never narrows.
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import type { KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs-core';
import type { NativeAddon } from '../native-addon.js';

/** What a cpu-style kernelFunc receives on the `native` backend (a MathBackendCPU). */
export interface CpuKernelArgs {
  inputs: Record<string, TensorInfo | undefined>;
  backend: MathBackendCPU;
  attrs?: NamedAttrMap;
}

/** One overridden kernel: its tfjs kernel name and a factory for its kernelFunc. */
export interface NativeKernelOverride {
  kernelName: string;
  make(addon: NativeAddon, stock: KernelFunc): KernelFunc;
}

/** Wraps a typed kernel body as a tfjs KernelFunc. */
export function asKernelFunc(body: (args: CpuKernelArgs) => TensorInfo | TensorInfo[]): KernelFunc {
  return body as unknown as KernelFunc;
}

/** The Float32Array behind a float32 tensor on the cpu-style backend, else undefined. */
export function f32Values(backend: MathBackendCPU, t: TensorInfo | undefined): Float32Array | undefined {
  if (t === undefined || t.dtype !== 'float32') return undefined;
  const values = backend.data.get(t.dataId)?.values;
  return values instanceof Float32Array ? values : undefined;
}

/** The Int32Array behind an int32 tensor on the cpu-style backend, else undefined. */
export function i32Values(backend: MathBackendCPU, t: TensorInfo | undefined): Int32Array | undefined {
  if (t === undefined || t.dtype !== 'int32') return undefined;
  const values = backend.data.get(t.dataId)?.values;
  return values instanceof Int32Array ? values : undefined;
}

/** Product of the dims (1 for a scalar shape). */
export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
