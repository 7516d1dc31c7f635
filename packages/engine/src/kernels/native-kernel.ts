// Shared shape of a native kernel override: it gets the addon and the stock tfjs-backend-cpu
// kernel, and returns a kernelFunc that does the fast path or hands the call to the stock
// kernel (other dtypes, rare layouts), so behaviour never narrows.
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import type { KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs-core';
import { pooledF32 } from '../buffer-pool.js';
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

/**
 * The float32 values of a float32 tensor on the cpu-style backend, else undefined. The cpu
 * backend keeps some float32 tensors in other arrays (a bool -> float32 Cast keeps the
 * Uint8Array), so those are widened here rather than sent down the slow stock path.
 */
export function f32Values(
  backend: MathBackendCPU,
  t: TensorInfo | undefined,
): Float32Array | undefined {
  if (t === undefined || t.dtype !== 'float32') return undefined;
  const values = backend.data.get(t.dataId)?.values;
  if (values instanceof Float32Array) return values;
  return ArrayBuffer.isView(values) && !(values instanceof DataView)
    ? Float32Array.from(values as unknown as ArrayLike<number>)
    : undefined;
}

/** Numeric typed array for a tfjs dtype (what the cpu backend stores). */
export type NumericArray = Float32Array | Int32Array | Uint8Array;

/** The numeric values of a float32/int32/bool tensor, as stored, else undefined (strings, complex). */
export function numericValues(
  backend: MathBackendCPU,
  t: TensorInfo | undefined,
): NumericArray | undefined {
  if (t === undefined || (t.dtype !== 'float32' && t.dtype !== 'int32' && t.dtype !== 'bool'))
    return undefined;
  const values = backend.data.get(t.dataId)?.values;
  return values instanceof Float32Array ||
    values instanceof Int32Array ||
    values instanceof Uint8Array
    ? values
    : undefined;
}

/** An array of `size` elements of the type tfjs uses for `dtype` (float32 not zero-filled). */
export function allocFor(dtype: 'float32' | 'int32' | 'bool', size: number): NumericArray {
  return dtype === 'float32'
    ? uninitF32(size)
    : dtype === 'int32'
      ? new Int32Array(size)
      : new Uint8Array(size);
}

/** The Int32Array behind an int32 tensor on the cpu-style backend, else undefined. */
export function i32Values(
  backend: MathBackendCPU,
  t: TensorInfo | undefined,
): Int32Array | undefined {
  if (t === undefined || t.dtype !== 'int32') return undefined;
  const values = backend.data.get(t.dataId)?.values;
  return values instanceof Int32Array ? values : undefined;
}

/**
 * A Float32Array of `size` elements WITHOUT zero-filling, for outputs a kernel writes in full:
 * `new Float32Array(n)` memsets every output first, a third of the time of a memory-bound op.
 * It comes from the buffer pool (a disposed tensor's buffer of the same size when there is one).
 */
export function uninitF32(size: number): Float32Array {
  return pooledF32(size);
}

/** Product of the dims (1 for a scalar shape). */
export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
