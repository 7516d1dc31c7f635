// The `native` backend: tfjs-backend-cpu's MathBackendCPU (tensors are plain JS TypedArrays,
// no 4 GiB wasm heap) with every cpu kernel, and the hot ones replaced by the C addon.
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import {
  type BackendValues,
  buffer,
  type DataId,
  type DataType,
  findBackendFactory,
  getBackend,
  getKernel,
  getKernelsForBackend,
  registerBackend,
  type Rank,
  registerKernel,
  type TensorBuffer,
  type TensorInfo,
  type TypedArray,
} from '@tensorflow/tfjs-core';
import { noteExposed, noteReleased, noteStored } from './buffer-pool.js';
import { elementwiseOverrides } from './kernels/native-elementwise.js';
import { indexOverrides } from './kernels/native-gather.js';
import type { NativeKernelOverride } from './kernels/native-kernel.js';
import { copyOverrides } from './kernels/copy-kernels.js';
import { unpackOverride } from './kernels/unpack-kernel.js';
import { batchMatMulOverride, fusedMatMulOverride } from './kernels/native-matmul.js';
import { reduceOverrides } from './kernels/native-reduce.js';
import type { NativeAddon } from './native-addon.js';
import { softmaxCrossEntropyKernels } from './softmax-cross-entropy.js';
import { attentionKernels } from './fused/fused-attention.js';
import { flashAttentionKernels } from './fused/fused-flash-attention.js';
import { rmsNormKernels } from './fused/fused-rms-norm.js';
import { rotaryKernels } from './fused/fused-rotary.js';
import { swiGluKernels } from './fused/fused-swiglu.js';
import { frozenLinearKernels } from './fused/frozen-linear.js';
import { logprobStatsKernels } from './fused/fused-logprob-stats.js';
import { adamWKernels } from './fused/fused-adamw.js';
import { useJsSegmentSum } from './kernels/js-segment-sum.js';
import { countingKernel } from './dispatch-counter.js';

/** Name under which the engine registers its backend with tfjs. */
export const NATIVE_BACKEND = 'native';

/**
 * A MathBackendCPU that tells the buffer pool (buffer-pool.ts) which buffers tensor data holds,
 * releases and hands out, so kernel outputs reuse the buffers of disposed tensors.
 */
export class PooledCpuBackend extends MathBackendCPU {
  override write(values: BackendValues, shape: number[], dtype: DataType): DataId {
    noteStored(values);
    return super.write(values, shape, dtype);
  }

  override move(
    dataId: DataId,
    values: BackendValues,
    shape: number[],
    dtype: DataType,
    refCount: number,
  ): void {
    noteStored(values);
    super.move(dataId, values, shape, dtype, refCount);
  }

  /** The values themselves go to the caller (`dataSync`, `data`): their buffer is never reused. */
  override readSync(dataId: DataId): BackendValues {
    const values = super.readSync(dataId);
    noteExposed(values);
    return values;
  }

  /** For kernels (tensors' own bufferSync goes through dataSync): the values stay poolable. */
  override bufferSync<R extends Rank, D extends DataType>(t: TensorInfo): TensorBuffer<R, D> {
    const values = this.data.get(t.dataId)?.values;
    if (t.dtype === 'string' || t.dtype === 'complex64' || !ArrayBuffer.isView(values))
      return super.bufferSync(t);
    return buffer(t.shape, t.dtype, values as TypedArray) as unknown as TensorBuffer<R, D>;
  }

  override disposeData(dataId: DataId, force = false): boolean {
    const values = this.data.get(dataId)?.values;
    const done = super.disposeData(dataId, force);
    if (values !== undefined && !this.data.has(dataId)) noteReleased(values);
    return done;
  }
}

/** The pooled backend without its 'install tfjs-node to speed things up' banner (we are the speed-up). */
function quietCpuBackend(): MathBackendCPU {
  const backend = new PooledCpuBackend();
  (backend as unknown as { firstUse: boolean }).firstUse = false;
  return backend;
}

/** The addon behind each backend registered with one (the decode kernels call it directly). */
const addonsByBackend = new Map<string, NativeAddon>();

/** The addon of the active backend, when it is a native backend with the addon loaded. */
export function activeNativeAddon(): NativeAddon | undefined {
  return addonsByBackend.get(getBackend());
}

/** Every kernel the addon replaces (the rest are the stock tfjs-backend-cpu kernels). */
export function nativeKernelOverrides(
  backendName: string = NATIVE_BACKEND,
): NativeKernelOverride[] {
  return [
    batchMatMulOverride,
    fusedMatMulOverride(backendName),
    ...elementwiseOverrides,
    ...reduceOverrides,
    ...indexOverrides,
    ...copyOverrides,
    unpackOverride,
  ];
}

/**
 * Registers `backendName` (default `native`) with tfjs: a MathBackendCPU with the stock cpu
 * kernels, overridden by the addon's where `addon` is given. Idempotent: a second call with an
 * already registered name does nothing and returns false.
 */
export function registerNativeBackend(
  addon: NativeAddon | undefined,
  backendName: string = NATIVE_BACKEND,
  priority = 0,
): boolean {
  if (findBackendFactory(backendName) !== null) return false;
  const overrides = new Map(
    (addon ? nativeKernelOverrides(backendName) : []).map((o) => [o.kernelName, o]),
  );
  for (const config of getKernelsForBackend('cpu')) {
    const override = overrides.get(config.kernelName);
    const kernelFunc =
      override && addon ? override.make(addon, config.kernelFunc) : config.kernelFunc;
    if (!getKernel(config.kernelName, backendName))
      registerKernel({
        ...config,
        backendName,
        kernelFunc: countingKernel(kernelFunc, config.kernelName),
      });
  }
  if (!addon) useJsSegmentSum(backendName); // without the addon: still not the O(segments x rows) stock one
  if (addon) {
    const fused = [
      softmaxCrossEntropyKernels,
      rmsNormKernels,
      swiGluKernels,
      rotaryKernels,
      attentionKernels,
      flashAttentionKernels,
      logprobStatsKernels,
      adamWKernels,
      frozenLinearKernels,
    ].flatMap((k) => k(addon, backendName));
    for (const config of fused) {
      if (!getKernel(config.kernelName, backendName))
        registerKernel({
          ...config,
          kernelFunc: countingKernel(config.kernelFunc, config.kernelName),
        });
    }
    addonsByBackend.set(backendName, addon);
  }
  registerBackend(backendName, () => quietCpuBackend(), priority);
  return true;
}
