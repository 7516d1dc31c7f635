import { getBackend } from '@tensorflow/tfjs-core';

const ASYNC_ONLY_BACKENDS = new Set(['webgpu', 'webgl']);

/**
 * Whether the active backend can read a tensor back synchronously (`dataSync`): the host-memory
 * backends (native, cpu, wasm, tensorflow) can; a GPU backend (webgpu) cannot, and code above the
 * engine then reads with `await t.data()`, once per step.
 */
export function readsSynchronously(): boolean {
  return !ASYNC_ONLY_BACKENDS.has(getBackend());
}
