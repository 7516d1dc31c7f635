import { getBackend, setBackend, type Tensor } from '@tensorflow/tfjs-core';
import { readBlocking } from './webgpu/blocking-read.js';

const ASYNC_ONLY_BACKENDS = new Set(['webgpu', 'webgl']);

/**
 * Whether the active backend can read a tensor back synchronously (`dataSync`): the host-memory
 * backends (native, cpu, wasm, tensorflow) can; a GPU backend (webgpu) cannot, and code above the
 * engine then reads with `await t.data()`, once per step.
 */
export function readsSynchronously(): boolean {
  return !ASYNC_ONLY_BACKENDS.has(getBackend());
}

/**
 * Runs `fn` on the host (`cpu`) backend when the active backend is a device one, then switches
 * back: for small host-side phases whose inputs and outputs are plain arrays (PPO's advantage
 * estimation, a sequential scan RL2 also runs on the CPU). `fn` must not return tensors.
 */
export async function onHostBackend<T>(fn: () => T): Promise<T> {
  if (readsSynchronously()) return fn();
  const device = getBackend();
  await setBackend('cpu');
  try {
    return fn();
  } finally {
    await setBackend(device);
  }
}

/**
 * `t`'s values on the host now: `dataSync` on a host backend; on webgpu a read that waits for the
 * device (`src/webgpu/blocking-read.ts`). For collectives through host memory inside a pass
 * (tensor and context parallelism), where tfjs's gradient functions cannot await; a step's
 * metrics are read with `await t.data()`.
 */
export function readValuesNow(t: Tensor): Float32Array | Int32Array | Uint8Array {
  if (readsSynchronously()) return t.dataSync() as Float32Array | Int32Array | Uint8Array;
  if (getBackend() !== 'webgpu')
    throw new Error(`readValuesNow: the ${getBackend()} backend has no blocking read`);
  return readBlocking(t);
}
