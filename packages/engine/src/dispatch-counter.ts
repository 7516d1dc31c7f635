// Counts kernel dispatches: every kernel the `native` backend runs (tfjs runKernel calls,
// including one kernel calling another) and every direct call into the addon made through the
// engine's decode kernels. A decode step's count is the figure to bring down: each dispatch
// costs tens of microseconds of tfjs bookkeeping whatever its size.
import type { KernelFunc } from '@tensorflow/tfjs-core';
import { timedCall } from './kernel-profile.js';

let dispatches = 0;

/** Kernel dispatches on the `native` backend since the process started (never reset). */
export function kernelDispatches(): number {
  return dispatches;
}

/** Adds `n` dispatches (direct addon calls). */
export function countDispatches(n = 1): void {
  dispatches += n;
}

/** `kernelFunc` counting one dispatch per call (and timed as `name` while a kernel profile records). */
export function countingKernel(kernelFunc: KernelFunc, name = 'unnamed'): KernelFunc {
  return ((args: never) => {
    dispatches += 1;
    return timedCall(name, kernelFunc, args);
  }) as KernelFunc;
}
