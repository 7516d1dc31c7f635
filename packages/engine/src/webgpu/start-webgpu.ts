// Starts tfjs's WebGPU backend in Node through Dawn (npm `webgpu`, dawn.node), and describes the
// adapter it got: a hardware GPU, or a software one (Mesa's lavapipe) that `auto` never takes.
import { setBackend } from '@tensorflow/tfjs-core';
import { watchDawnTicks } from './blocking-read.js';
import { registerWgslKernels } from './wgsl-program.js';

/** What the WebGPU adapter is, as the engine line prints it. */
export interface WebGpuAdapter {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A CPU implementation (lavapipe / SwiftShader): correct, but no faster than the CPU backends. */
  software: boolean;
  /** Largest storage buffer one kernel can bind, in bytes (a [V, H] table must fit in it). */
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  /** The adapter can run f16 shaders (`shader-f16`). */
  shaderF16: boolean;
}

export type WebGpuStart = { ok: true; adapter: WebGpuAdapter } | { ok: false; reason: string };

interface DawnModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

/** Loads dawn.node and installs `navigator.gpu` and the WebGPU globals tfjs expects. */
async function installDawn(): Promise<GPU | string> {
  const existing = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (existing) return existing;
  let dawn: DawnModule;
  try {
    dawn = (await import('webgpu')) as unknown as DawnModule;
  } catch (err) {
    return `the "webgpu" package (Dawn for Node) did not load: ${(err as Error).message}`;
  }
  Object.assign(globalThis, dawn.globals);
  watchDawnTicks();
  const gpu = dawn.create([]);
  const nav = (globalThis as { navigator?: object }).navigator;
  if (nav) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true });
  return gpu;
}

function describe(adapter: GPUAdapter): WebGpuAdapter {
  const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  const software =
    info.isFallbackAdapter === true ||
    info.architecture === 'software' ||
    /llvmpipe|lavapipe|swiftshader/i.test(`${info.device} ${info.description}`);
  return {
    vendor: info.vendor || 'unknown vendor',
    architecture: info.architecture || 'unknown architecture',
    device: info.device,
    description: info.description,
    software,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    shaderF16: adapter.features.has('shader-f16'),
  };
}

const SOFTWARE_HINT =
  'install a GPU driver with Vulkan (NVIDIA, AMD, Intel), or Mesa 25 lavapipe for a software adapter ' +
  '(Debian: apt-get install -t bookworm-backports mesa-vulkan-drivers)';

/**
 * Finds a WebGPU adapter and starts tfjs's webgpu backend on it. With `hardwareOnly` (what
 * `auto` asks for) a software adapter is refused: it computes right but slower than `native`.
 */
export async function startWebGpu(options: { hardwareOnly: boolean }): Promise<WebGpuStart> {
  const gpu = await installDawn();
  if (typeof gpu === 'string') return { ok: false, reason: gpu };
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter)
    return {
      ok: false,
      reason: `no WebGPU adapter (Dawn found no Vulkan device; ${SOFTWARE_HINT})`,
    };
  const described = describe(adapter);
  if (options.hardwareOnly && described.software)
    return { ok: false, reason: `only a software WebGPU adapter (${described.description})` };
  try {
    await import('@tensorflow/tfjs-backend-webgpu');
    if (!(await setBackend('webgpu')))
      return { ok: false, reason: 'tfjs-backend-webgpu failed to start' };
    registerWgslKernels();
  } catch (err) {
    return { ok: false, reason: `tfjs-backend-webgpu failed to start: ${(err as Error).message}` };
  }
  return { ok: true, adapter: described };
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

/** The engine line's description of the adapter: vendor, architecture, key limits. */
export function adapterLine(a: WebGpuAdapter): string {
  return (
    `${a.vendor} ${a.architecture}${a.software ? ' (software)' : ''}: ${a.description || a.device}; ` +
    `storage binding ${mib(a.maxStorageBufferBindingSize)}, buffer ${mib(a.maxBufferSize)}, ` +
    `workgroup memory ${a.maxComputeWorkgroupStorageSize / 1024} KiB, shader-f16 ${a.shaderF16 ? 'yes' : 'no'}`
  );
}
