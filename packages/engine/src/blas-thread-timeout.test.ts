import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeForTests } from './testing/native-for-tests.js';

const load = nativeForTests();
const here = import.meta.dirname;

/**
 * In a fresh process (OpenBLAS reads its environment once, when the addon loads): the process's
 * OPENBLAS_THREAD_TIMEOUT after the load, and the CPU ms it spends during 300 ms of sleep right
 * after a 2-thread 512^3 product (OpenBLAS workers still spinning show up here).
 */
function afterProduct(env: NodeJS.ProcessEnv): { timeout?: string; idleCpuMs: number } {
  const script = `
    import { loadNativeAddon } from ${JSON.stringify(join(here, 'native-addon.ts'))};
    const load = loadNativeAddon();
    if (!load.ok) throw new Error(load.reason);
    const a = new Float32Array(512 * 512).fill(1), c = new Float32Array(512 * 512);
    load.addon.setThreads(2);
    for (let i = 0; i < 5; i++) load.addon.gemm(false, false, 1, 512, 512, 512, a, 0, a, 0, c);
    const c0 = process.cpuUsage();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    const d = process.cpuUsage(c0);
    console.log(JSON.stringify({ timeout: process.env.OPENBLAS_THREAD_TIMEOUT, idleCpuMs: (d.user + d.system) / 1000 }));`;
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script],
    {
      encoding: 'utf8',
      env,
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1) ?? '');
}

describe.skipIf(!load.ok)('OpenBLAS worker threads between products', () => {
  it('sleep instead of spinning (the addon loads with OPENBLAS_THREAD_TIMEOUT=4), leaving the environment as it was', () => {
    const env = { ...process.env };
    delete env.OPENBLAS_THREAD_TIMEOUT;
    const r = afterProduct(env);
    // a spinning worker (OpenBLAS's default, 2^28 cycles) burns ~100 ms of this sleep
    expect(r.idleCpuMs).toBeLessThan(10);
    expect(r.timeout).toBeUndefined(); // child processes keep their own defaults
  });

  it('keeps an OPENBLAS_THREAD_TIMEOUT the environment sets', () => {
    expect(afterProduct({ ...process.env, OPENBLAS_THREAD_TIMEOUT: '20' }).timeout).toBe('20');
  });
});
