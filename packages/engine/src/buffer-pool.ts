// Reuses the ArrayBuffers of disposed tensors for the next kernel outputs of the same size.
// A tfjs tensor on the native backend holds a Float32Array whose memory V8 counts as external;
// a training step allocates hundreds of megabytes of them, and V8 answers that pressure with a
// full (Mark-Compact) collection every few tens of megabytes. With the pool a steady-state step
// takes its outputs from the buffers the previous step disposed and allocates (almost) nothing.
//
// Only buffers the pool itself allocated are ever reused, and only once no tensor data holds
// them: the backend reports every store (`noteStored`, views of one buffer count separately) and
// every disposal (`noteReleased`). A buffer whose values were handed out (`readSync`, `data()`,
// `dataSync()`, `arraySync()`) is `noteExposed` and never pooled, since the caller can still see it.

/** Free bytes kept for reuse beyond which disposed buffers are left to the garbage collector. */
export const DEFAULT_POOL_LIMIT_BYTES = 512 * 2 ** 20;
/** Outputs below this many bytes take the ordinary path (Node pools small arrays itself). */
const MIN_POOLED_BYTES = 4096;

/** Tensor data (dataIds) holding each buffer the pool allocated; absent once exposed. */
let holders = new WeakMap<ArrayBuffer, number>();
/** Free buffers by byte length, newest last, each with the epoch (see `trimBufferPool`) it was freed in. */
const free = new Map<number, { buffer: ArrayBuffer; epoch: number }[]>();
let epoch = 0;
let freeBytes = 0;
let limitBytes = DEFAULT_POOL_LIMIT_BYTES;
const counts = { allocated: 0, reused: 0 };

/** What the pool has done since the last `resetBufferPool`, for tests and benches. */
export interface BufferPoolStats {
  /** Buffers freshly allocated (external memory V8 sees). */
  allocated: number;
  /** Outputs served from a disposed tensor's buffer. */
  reused: number;
  /** Bytes currently held free for reuse (never above the limit). */
  freeBytes: number;
  limitBytes: number;
}

export function bufferPoolStats(): BufferPoolStats {
  return { ...counts, freeBytes, limitBytes };
}

/** Drops every free buffer and zeroes the counts; sets the limit (bytes, 0: no pooling) when given. */
export function resetBufferPool(limit?: number): void {
  free.clear();
  freeBytes = 0;
  holders = new WeakMap();
  counts.allocated = 0;
  counts.reused = 0;
  if (limit !== undefined) limitBytes = limit;
}

/**
 * A Float32Array of `size` elements, NOT zero-filled (for outputs a kernel writes in full): a
 * disposed tensor's buffer of the same byte length when the pool holds one, else a new one.
 */
export function pooledF32(size: number): Float32Array {
  const bytes = size * 4;
  if (bytes < MIN_POOLED_BYTES) return new Float32Array(size);
  const buffer = free.get(bytes)?.pop()?.buffer;
  if (buffer) {
    freeBytes -= bytes;
    counts.reused++;
    holders.set(buffer, 0);
    return new Float32Array(buffer, 0, size);
  }
  const fresh = Buffer.allocUnsafeSlow(bytes).buffer as ArrayBuffer;
  counts.allocated++;
  holders.set(fresh, 0);
  return new Float32Array(fresh, 0, size);
}

function bufferOf(values: unknown): ArrayBuffer | undefined {
  return ArrayBuffer.isView(values) ? (values.buffer as ArrayBuffer) : undefined;
}

/** Tensor data now holds `values` (a backend `write` or `move`). */
export function noteStored(values: unknown): void {
  const buffer = bufferOf(values);
  const n = buffer && holders.get(buffer);
  if (buffer && n !== undefined) holders.set(buffer, n + 1);
}

/** `values` left the backend's hands (read back): its buffer is never reused. */
export function noteExposed(values: unknown): void {
  const buffer = bufferOf(values);
  if (buffer) holders.delete(buffer);
}

/** Tensor data holding `values` was disposed; its buffer is freed for reuse with the last holder. */
export function noteReleased(values: unknown): void {
  const buffer = bufferOf(values);
  const n = buffer && holders.get(buffer);
  if (!buffer || n === undefined || n < 1) return;
  if (n > 1) {
    holders.set(buffer, n - 1);
    return;
  }
  holders.delete(buffer);
  if (freeBytes + buffer.byteLength > limitBytes) return;
  const list = free.get(buffer.byteLength);
  if (list) list.push({ buffer, epoch });
  else free.set(buffer.byteLength, [{ buffer, epoch }]);
  freeBytes += buffer.byteLength;
}

/**
 * Drops the free buffers that waited a whole epoch unused (sizes the work stopped asking for, as
 * when sequence lengths change), then starts a new epoch. `freeDisposedBuffers` calls it once a
 * training step, before its collection, so those buffers go back to malloc with the step's garbage.
 */
export function trimBufferPool(): void {
  for (const [bytes, list] of free) {
    const kept = list.filter((f) => f.epoch === epoch);
    freeBytes -= (list.length - kept.length) * bytes;
    if (kept.length > 0) free.set(bytes, kept);
    else free.delete(bytes);
  }
  epoch++;
}

/** Sets the most free bytes the pool keeps (0 turns it off), dropping free buffers beyond it. */
export function setBufferPoolLimit(bytes: number): void {
  limitBytes = bytes;
  for (const [size, list] of free) {
    while (list.length > 0 && freeBytes > limitBytes) {
      list.shift();
      freeBytes -= size;
    }
    if (list.length === 0) free.delete(size);
  }
}
