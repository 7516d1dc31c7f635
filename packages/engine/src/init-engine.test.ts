import { getBackend } from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { EngineError } from './errors.js';
import { initEngine } from './init-engine.js';
import { loadNativeAddon } from './native-addon.js';
import { nativeForTests } from './testing/native-for-tests.js';

const hasNative = nativeForTests().ok;
// Where initEngine({ env: {} }) finds the addon: the prebuilt package, else build/.
const defaultLoad = loadNativeAddon({});
const nativeFrom = defaultLoad.ok ? defaultLoad.from : 'nowhere';

describe('initEngine', () => {
  it('starts the requested cpu backend and logs exactly one line naming it', async () => {
    const lines: string[] = [];
    const info = await initEngine({ backend: 'cpu', logger: (l) => lines.push(l), env: {} });
    expect(info).toEqual({ backend: 'cpu', threads: 1, nativeKernels: false, retainMemory: false });
    expect(getBackend()).toBe('cpu');
    expect(lines).toEqual(['rl2 engine: backend cpu, 1 thread']);
  });

  it('reads RL2_BACKEND and RL2_THREADS from the environment', async () => {
    const lines: string[] = [];
    const info = await initEngine({
      logger: (l) => lines.push(l),
      env: { RL2_BACKEND: 'cpu', RL2_THREADS: '3' },
    });
    expect(info.backend).toBe('cpu');
    expect(lines).toHaveLength(1);
  });

  it('rejects an unknown RL2_BACKEND, naming the variable and the choices', async () => {
    await expect(initEngine({ env: { RL2_BACKEND: 'gpu' }, logger: () => {} })).rejects.toThrow(
      /RL2_BACKEND="gpu" is not a backend; use one of auto, tensorflow, webgpu, native, wasm, cpu/,
    );
    await expect(initEngine({ threads: 0, env: {}, logger: () => {} })).rejects.toBeInstanceOf(
      EngineError,
    );
  });

  it('throws BACKEND_UNAVAILABLE for tensorflow when tfjs-node is not installed', async () => {
    const err = await initEngine({ backend: 'tensorflow', env: {}, logger: () => {} }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe('BACKEND_UNAVAILABLE');
    expect((err as Error).message).toMatch(/@tensorflow\/tfjs-node/);
  });

  it('an explicit native without the addon is an error naming why, never a silent fallback', async () => {
    const err = await initEngine({
      backend: 'native',
      env: { RL2_NO_NATIVE: '1' },
      logger: () => {},
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe('BACKEND_UNAVAILABLE');
    expect((err as Error).message).toMatch(/backend "native" cannot start: RL2_NO_NATIVE=1 is set/);
    expect((err as Error).message).toMatch(/RL2_BACKEND \/ trainer\.backend/);
  });

  it('auto falls back past native with a one-line notice when the addon is disabled', async () => {
    const lines: string[] = [];
    const info = await initEngine({ env: { RL2_NO_NATIVE: '1' }, logger: (l) => lines.push(l) });
    expect(['wasm', 'cpu']).toContain(info.backend);
    expect(info.nativeKernels).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/native kernels unavailable: RL2_NO_NATIVE=1 is set/);
  });

  it('backend auto defers to RL2_BACKEND (a config default never overrides the environment)', async () => {
    const info = await initEngine({
      backend: 'auto',
      env: { RL2_BACKEND: 'cpu' },
      logger: () => {},
    });
    expect(info.backend).toBe('cpu');
    expect(getBackend()).toBe('cpu');
  });

  it.skipIf(!hasNative)('auto picks the native backend when the addon is built', async () => {
    const lines: string[] = [];
    const info = await initEngine({ threads: 1, env: {}, logger: (l) => lines.push(l) });
    expect(info).toEqual({
      backend: 'native',
      threads: 1,
      nativeKernels: true,
      retainMemory: false,
    });
    expect(getBackend()).toBe('native');
    expect(lines).toEqual([
      `rl2 engine: backend native, 1 thread (OpenBLAS sgemm + C kernels from ${nativeFrom})`,
    ]);
  });

  it('training: auto without the addon skips wasm for cpu and says so; an explicit wasm throws', async () => {
    const lines: string[] = [];
    const info = await initEngine({
      training: true,
      env: { RL2_NO_NATIVE: '1' },
      logger: (l) => lines.push(l),
    });
    expect(info.backend).toBe('cpu');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /native kernels unavailable: RL2_NO_NATIVE=1 is set; wasm skipped for training/,
    );
    await expect(
      initEngine({ backend: 'wasm', training: true, env: {}, logger: () => {} }),
    ).rejects.toThrow(/backend "wasm" cannot train .*UnsortedSegmentSum/);
  });
});
