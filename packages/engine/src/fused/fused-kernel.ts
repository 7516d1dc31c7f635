// Shared plumbing of the fused model kernels (RMSNorm, SwiGLU, rotary, attention): they exist
// only on backends where the engine registered them (`native`); callers fall back otherwise.
import { getBackend, getKernel } from '@tensorflow/tfjs-core';

/** Whether kernel `name` is registered for the active backend. */
export function hasKernel(name: string): boolean {
  return getKernel(name, getBackend()) !== undefined;
}
