// A blocking read of a webgpu tensor, for collectives through host memory inside a pass: tensor
// and context parallelism all-reduce activations in tfjs's synchronous forward and gradient
// functions, as PyTorch's Gloo copies a CUDA tensor to the host and waits. WebGPU has no
// synchronous map, and tfjs's readSync draws through OffscreenCanvas, which Node lacks. dawn.node
// completes a mapAsync in `instance.ProcessEvents()`, which it schedules with the global
// `setImmediate` while any of its promises is pending (src/dawn/node/binding/AsyncRunner.cpp,
// https://dawn.googlesource.com/dawn/+/refs/heads/main/src/dawn/node/binding/AsyncRunner.cpp).
// `watchDawnTicks` records that tick as Dawn schedules it; `readBlocking` runs it in place until
// the staging buffer is mapped, then leaves the next tick to the event loop as Dawn would.
import { backend, type DataType, type Tensor, util } from '@tensorflow/tfjs-core';

/** The parts of tfjs-backend-webgpu 4.22's WebGPUBackend this uses (structural: no import of the package). */
interface WebGpuReadInternals {
  tensorMap: { get(dataId: object): { values: unknown; dtype: DataType; resource?: unknown } };
  bufferManager: {
    acquireBuffer(size: number, usage: number): GPUBuffer;
    releaseBuffer(buffer: GPUBuffer): void;
  };
  commandEncoder: GPUCommandEncoder | null;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

type Immediate = ReturnType<typeof setImmediate>;
interface DawnTick {
  run: () => void;
  handle: Immediate;
}

/** Dawn's ProcessEvents tick, scheduled and not yet run (null: none pending). */
let pendingTick: DawnTick | null = null;
let watching = false;

/** Dawn's tick is a native function (N-API), anonymous and unbound; every other caller's runs as usual. */
function isDawnTick(fn: unknown): fn is () => void {
  return (
    typeof fn === 'function' &&
    fn.name === '' &&
    /\{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(fn))
  );
}

/** Wraps the global `setImmediate` so Dawn's scheduled tick can be run in place (once; after dawn.node loads). */
export function watchDawnTicks(): void {
  if (watching) return;
  watching = true;
  const schedule = globalThis.setImmediate;
  const wrapped = ((fn: (...args: unknown[]) => void, ...args: unknown[]) => {
    if (!isDawnTick(fn)) return schedule(fn, ...args);
    const tick: DawnTick = { run: fn, handle: undefined as unknown as Immediate };
    tick.handle = schedule(() => {
      if (pendingTick === tick) pendingTick = null;
      fn();
    });
    pendingTick = tick;
    return tick.handle;
  }) as typeof setImmediate;
  // keeps setImmediate[util.promisify.custom] (timers/promises' setImmediate)
  Object.defineProperties(wrapped, Object.getOwnPropertyDescriptors(schedule));
  globalThis.setImmediate = wrapped;
}

/** Runs Dawn's pending tick now (it may schedule the next one); false when none is pending. */
function runDawnTick(): boolean {
  const tick = pendingTick;
  if (!tick) return false;
  pendingTick = null;
  clearImmediate(tick.handle);
  tick.run();
  return true;
}

const pause = new Int32Array(new SharedArrayBuffer(4));
let reads = 0;

/**
 * Reads that waited for the device since the process started (never reset): each is a host
 * round trip inside a pass, which a device-to-device collective (NCCL) would not make.
 */
export function blockingReads(): number {
  return reads;
}

/**
 * The values of `t` (on the active webgpu backend) on the host, waiting for the device: a copy
 * into a staging buffer, then Dawn's events processed in place until it maps. The values are
 * cached on the tensor, as `await t.data()` caches them. Only for host collectives inside a pass;
 * a step reads its metrics with `await t.data()`.
 */
export function readBlocking(t: Tensor): Float32Array | Int32Array | Uint8Array {
  const gpu = backend() as unknown as WebGpuReadInternals;
  const data = gpu.tensorMap.get(t.dataId);
  if (data.values != null) return data.values as Float32Array | Int32Array | Uint8Array;
  if (!watching || !(data.resource instanceof GPUBuffer))
    throw new Error(
      'readBlocking: the tensor is not in a GPU buffer of a webgpu backend that initEngine started',
    );
  const source = data.resource;
  const staging = gpu.bufferManager.acquireBuffer(
    source.size,
    GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
  );
  gpu.ensureCommandEncoderReady();
  gpu.endComputePassEncoder();
  gpu.commandEncoder!.copyBufferToBuffer(source, 0, staging, 0, source.size);
  gpu.submitQueue();
  const mapped = staging.mapAsync(GPUMapMode.READ);
  mapped.catch(() => {}); // a failure shows as the buffer not mapping, reported below
  for (let spins = 0; staging.mapState === 'pending'; spins++) {
    if (!runDawnTick())
      throw new Error('readBlocking: Dawn scheduled no event tick for the pending read');
    // lets a software adapter's threads (lavapipe) have the cores while the copy runs
    if (spins > 64) Atomics.wait(pause, 0, 0, 0.05);
  }
  if (staging.mapState !== 'mapped')
    throw new Error(
      `readBlocking: the staging buffer did not map (${staging.mapState}); device lost?`,
    );
  const bytes = staging.getMappedRange().slice(0);
  staging.unmap();
  gpu.bufferManager.releaseBuffer(staging);
  reads += 1;
  const values = util.convertBackendValuesAndArrayBuffer(bytes, data.dtype) as
    | Float32Array
    | Int32Array
    | Uint8Array;
  data.values = values;
  return values;
}
