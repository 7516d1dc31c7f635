// Picks and starts the tfjs backend every rl2 model runs on, and says once which one it chose.
import { availableParallelism, totalmem } from 'node:os';
import {
  engine,
  findBackend,
  getBackend,
  registerGradient,
  setBackend,
} from '@tensorflow/tfjs-core';
import { installEarlyTapeRelease } from './early-tape-release.js';
import '@tensorflow/tfjs-backend-cpu';
import { setBufferPoolLimit } from './buffer-pool.js';
import { EngineError } from './errors.js';
import { batchMatMulGradConfig } from './batch-mat-mul-grad.js';
import { broadcastGradConfigs } from './broadcast-grads.js';
import { loadNativeAddon, type NativeLoad } from './native-addon.js';
import { useJsSegmentSum } from './kernels/js-segment-sum.js';
import { NATIVE_BACKEND, registerNativeBackend } from './native-backend.js';
import { softmaxCrossEntropyGradConfig } from './softmax-cross-entropy.js';
import { mayHaveGpu } from './webgpu/gpu-devices.js';
import { adapterLine, startWebGpu, type WebGpuAdapter } from './webgpu/start-webgpu.js';

/** Backends `initEngine` can start; `auto` picks the fastest one available. */
export const ENGINE_BACKENDS = ['auto', 'tensorflow', 'webgpu', 'native', 'wasm', 'cpu'] as const;
export type EngineBackendChoice = (typeof ENGINE_BACKENDS)[number];
/** The backend actually running (tfjs backend name). */
export type EngineBackend = Exclude<EngineBackendChoice, 'auto'>;

export interface EngineOptions {
  /**
   * Default: `RL2_BACKEND`, else `auto` (tfjs-node-gpu, tfjs-node, a hardware WebGPU adapter,
   * native, wasm, cpu). `auto` here also defers to `RL2_BACKEND`. An explicit choice that cannot
   * start throws BACKEND_UNAVAILABLE (wasm and cpu always start).
   */
  backend?: EngineBackendChoice;
  /** Compute threads (OpenBLAS for `native`). Default: `RL2_THREADS`, else all cores. */
  threads?: number;
  /** Receives the one line saying what was chosen. Default: console.info. */
  logger?: (line: string) => void;
  /** Environment to read RL2_BACKEND / RL2_THREADS / RL2_NO_NATIVE from. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * The process will train (take gradients of models). Stock tfjs-backend-wasm 4.22 cannot:
   * it has no UnsortedSegmentSum kernel (the embedding gradient) and its heap stops at 4 GiB.
   * With `training: true`, `auto` and a `native` fallback skip wasm and go to cpu, and an
   * explicit `wasm` throws INVALID_ARGUMENT. Default false (inference may use wasm).
   */
  training?: boolean;
  /**
   * Keep freed memory in the process for the next tensors instead of handing it back to the
   * kernel (native backend on glibc: malloc stops using mmap for large blocks and never trims its
   * heap). Where first touching a fresh page is slow (about 14 us per 4 KiB page on the VM we
   * measured), a Qwen3-0.6B SFT step otherwise spends half its time faulting in new gradient and
   * optimizer buffers. The process's RSS then stays at its high-water mark, as with a caching
   * allocator. Half the machine's memory is first reserved in the heap for transparent huge
   * pages (address space only, untouched), where first touches cost one fault per 2 MiB.
   * Default: `RL2_RETAIN_MEMORY` (1 or 0), else `training`.
   */
  retainMemory?: boolean;
  /**
   * Most MiB of disposed tensors' buffers the native backend keeps for the next outputs of the
   * same size (buffer-pool.ts; 0 turns the pool off). Default: `RL2_BUFFER_POOL_MB`, else an
   * eighth of the machine's memory with retainMemory, 256 otherwise.
   */
  bufferPoolMb?: number;
}

export interface EngineInfo {
  backend: EngineBackend;
  threads: number;
  /** True when the C kernels (OpenBLAS sgemm etc.) are in use. */
  nativeKernels: boolean;
  /** True when freed memory is kept for reuse (`EngineOptions.retainMemory` took effect). */
  retainMemory: boolean;
  /** Why a faster backend was skipped, when one was (also part of the logged line). */
  notice?: string;
  /** The WebGPU adapter, when the backend is `webgpu`. */
  adapter?: WebGpuAdapter;
}

/** The Node packages behind the `tensorflow` backend, tried in this order (never dependencies). */
const TFJS_NODE_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'];

function parseBackend(value: string | undefined, source: string): EngineBackendChoice {
  if (value === undefined || value === '') return 'auto';
  if ((ENGINE_BACKENDS as readonly string[]).includes(value)) return value as EngineBackendChoice;
  throw new EngineError(
    'INVALID_ARGUMENT',
    `${source}="${value}" is not a backend; use one of ${ENGINE_BACKENDS.join(', ')}`,
  );
}

function parseThreads(value: number | string | undefined, source: string): number {
  if (value === undefined || value === '') return availableParallelism();
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${source}=${value} must be a positive integer number of threads`,
    );
  }
  return n;
}

/** Imports tfjs-node(-gpu) if the user installed it; returns a reason string when it cannot. */
async function startTensorflow(): Promise<string | undefined> {
  const reasons: string[] = [];
  for (const name of TFJS_NODE_PACKAGES) {
    try {
      await import(/* @vite-ignore */ name);
    } catch {
      reasons.push(`${name} not installed`);
      continue;
    }
    if (!findBackend('tensorflow') && !(await setBackend('tensorflow').catch(() => false))) {
      return `${name} is installed but registered no "tensorflow" backend with this @tensorflow/tfjs-core (install a version matching it)`;
    }
    if (await setBackend('tensorflow')) return undefined;
    reasons.push(`${name} failed to start`);
  }
  return reasons.join(', ');
}

/** The cpu backend prints an 'install tfjs-node' banner on first use; the line we log replaces it. */
function silenceNodeBanner(backend: string): void {
  const instance = findBackend(backend) as unknown as { firstUse?: boolean } | null;
  if (instance && 'firstUse' in instance) instance.firstUse = false;
}

/**
 * Registers tfjs's gradient functions, then the engine's fixes on top. On Node,
 * @tensorflow/tfjs-core's CommonJS build registers no gradients at all (they live in its ES
 * module tree, which only the @tensorflow/tfjs bundle carries), so `tf.grads` fails with
 * "gradient function not found" without this.
 */
async function installGradients(): Promise<void> {
  await import('@tensorflow/tfjs');
  for (const config of [
    batchMatMulGradConfig,
    ...broadcastGradConfigs,
    softmaxCrossEntropyGradConfig,
  ])
    registerGradient(config);
  installEarlyTapeRelease(engine() as unknown as Parameters<typeof installEarlyTapeRelease>[0]);
}

async function startWasm(): Promise<boolean> {
  try {
    await import('@tensorflow/tfjs-backend-wasm');
    return await setBackend('wasm');
  } catch {
    return false;
  }
}

/** The huge-page heap reserved with retainMemory: half the machine's memory (address space only). */
const hugePageReserve = () => Math.floor(totalmem() / 2);

function parseRetain(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === '0' || value === '1') return value === '1';
  throw new EngineError(
    'INVALID_ARGUMENT',
    `RL2_RETAIN_MEMORY="${value}" must be 1 (keep freed memory for reuse) or 0 (give it back)`,
  );
}

function parsePoolMb(value: number | string | undefined, source: string, retain: boolean): number {
  if (value === undefined || value === '') return retain ? totalmem() / 8 / 2 ** 20 : 256;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0)
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${source}=${value} must be a number of MiB >= 0 (0 turns the buffer pool off)`,
    );
  return n;
}

async function startNative(load: NativeLoad, threads: number): Promise<boolean> {
  if (!load.ok) return false;
  registerNativeBackend(load.addon);
  if (!(await setBackend(NATIVE_BACKEND))) return false;
  load.addon.setThreads(threads);
  return true;
}

/**
 * Chooses the tfjs backend (see `EngineOptions.backend`), starts it, installs the engine's
 * gradient fixes, and logs one line that says which backend and, for native, where its addon
 * came from: `rl2 engine: backend native, 2 threads (OpenBLAS sgemm + C kernels from @rl2/engine-linux-x64-gnu)`.
 * `auto` falls back in that order and says on the same line why a faster one was skipped; an
 * explicit `tensorflow`, `webgpu` or `native` that cannot start throws BACKEND_UNAVAILABLE with
 * the reason (a run that asked for a device never computes elsewhere). For webgpu the line names
 * the adapter: `rl2 engine: backend webgpu, adapter nvidia hopper: NVIDIA H200; storage binding ...`.
 */
export async function initEngine(options: EngineOptions = {}): Promise<EngineInfo> {
  const env = options.env ?? process.env;
  const choice =
    options.backend && options.backend !== 'auto'
      ? options.backend
      : parseBackend(env.RL2_BACKEND, 'RL2_BACKEND');
  if (!(ENGINE_BACKENDS as readonly string[]).includes(choice))
    parseBackend(choice, 'initEngine({ backend })');
  const threads = parseThreads(
    options.threads ?? env.RL2_THREADS,
    options.threads !== undefined ? 'initEngine({ threads })' : 'RL2_THREADS',
  );
  const retain =
    options.retainMemory ?? parseRetain(env.RL2_RETAIN_MEMORY, options.training === true);
  const poolMb = parsePoolMb(
    options.bufferPoolMb ?? env.RL2_BUFFER_POOL_MB,
    options.bufferPoolMb !== undefined ? 'initEngine({ bufferPoolMb })' : 'RL2_BUFFER_POOL_MB',
    retain,
  );
  const log = options.logger ?? ((line: string) => console.info(line));
  await installGradients();

  const notices: string[] = [];
  const done = (
    backend: EngineBackend,
    usedThreads: number,
    nativeFrom?: string,
    retainMemory = false,
    device?: string,
  ): EngineInfo => {
    silenceNodeBanner(backend);
    const notice = notices.length > 0 ? notices.join('; ') : undefined;
    const nativeKernels = nativeFrom !== undefined;
    const what = nativeKernels
      ? ` (OpenBLAS sgemm + C kernels from ${nativeFrom})`
      : backend === 'native'
        ? ' (pure kernels)'
        : '';
    const where = device
      ? `adapter ${device}`
      : `${usedThreads} thread${usedThreads === 1 ? '' : 's'}${what}`;
    log(`rl2 engine: backend ${backend}, ${where}${notice ? `; ${notice}` : ''}`);
    return {
      backend,
      threads: usedThreads,
      nativeKernels,
      retainMemory,
      ...(notice ? { notice } : {}),
    };
  };

  if (choice === 'tensorflow' || choice === 'auto') {
    const reason = await startTensorflow();
    if (reason === undefined) return done('tensorflow', threads);
    if (choice === 'tensorflow') {
      throw new EngineError(
        'BACKEND_UNAVAILABLE',
        `backend "tensorflow" needs @tensorflow/tfjs-node or @tensorflow/tfjs-node-gpu (${reason}); install one, or use RL2_BACKEND=native`,
      );
    }
  }
  if (choice === 'webgpu' || (choice === 'auto' && mayHaveGpu())) {
    const gpu = await startWebGpu({ hardwareOnly: choice === 'auto' });
    if (gpu.ok) {
      const info = done('webgpu', threads, undefined, false, adapterLine(gpu.adapter));
      return { ...info, adapter: gpu.adapter };
    }
    if (choice === 'webgpu')
      throw new EngineError(
        'BACKEND_UNAVAILABLE',
        `backend "webgpu" cannot start: ${gpu.reason}; or choose another backend (RL2_BACKEND / trainer.backend = native, cpu)`,
      );
  }
  if (choice === 'auto' || choice === 'native') {
    const load = loadNativeAddon(env);
    if (load.ok && (await startNative(load, threads))) {
      setBufferPoolLimit(Math.floor(poolMb * 2 ** 20));
      return done(
        'native',
        threads,
        load.from,
        retain && load.addon.retainFreedMemory(hugePageReserve()),
      );
    }
    const reason = load.ok ? 'the native backend failed to start' : load.reason;
    if (choice === 'native')
      throw new EngineError(
        'BACKEND_UNAVAILABLE',
        `backend "native" cannot start: ${reason}; build it (pnpm build, with a C compiler and OpenBLAS), ` +
          'or choose backend auto or cpu (RL2_BACKEND / trainer.backend)',
      );
    notices.push(`native kernels unavailable: ${reason}`);
  }
  if (choice === 'wasm' && options.training) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      'backend "wasm" cannot train (tfjs-backend-wasm 4.22 has no UnsortedSegmentSum kernel for ' +
        'the embedding gradient, and a 4 GiB heap); use backend auto, native or cpu',
    );
  }
  if (choice !== 'cpu' && options.training)
    notices.push('wasm skipped for training (no UnsortedSegmentSum kernel)');
  else if (choice !== 'cpu' && (await startWasm())) return done('wasm', 1);
  if (choice === 'wasm') notices.push('wasm backend failed to start');
  useJsSegmentSum('cpu'); // the stock one is O(segments x rows)
  if (!(await setBackend('cpu')))
    throw new EngineError(
      'BACKEND_UNAVAILABLE',
      `tfjs could not start the cpu backend (current: ${getBackend()})`,
    );
  return done('cpu', 1);
}
