// Hands the buffers of disposed tensors back to the allocator now, instead of at V8's next
// garbage collection, so the next step's tensors reuse them (see initEngine's retainMemory).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimBufferPool } from './buffer-pool.js';

let collect: (() => void) | undefined;

/**
 * Runs a full V8 garbage collection. A disposed tfjs tensor on a cpu-style backend drops its
 * Float32Array, but the memory only returns to malloc when V8 collects the array; between
 * optimizer steps of a large model that can be gigabytes, which the next step would otherwise
 * take as fresh pages. Costs a few milliseconds with a small JS heap. First drops the buffer
 * pool's buffers that no output took during the last step (`trimBufferPool`).
 */
export function freeDisposedBuffers(): void {
  trimBufferPool();
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}
