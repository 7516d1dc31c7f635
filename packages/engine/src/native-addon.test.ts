import { describe, expect, it } from 'vitest';
import { loadNativeAddon, NATIVE_ABI } from './native-addon.js';

describe('loadNativeAddon', () => {
  it('reports RL2_NO_NATIVE as the reason, without touching the file system', () => {
    expect(loadNativeAddon({ RL2_NO_NATIVE: '1' })).toEqual({ ok: false, reason: 'RL2_NO_NATIVE=1 is set' });
  });

  it('names the missing file and the command that builds it', () => {
    const r = loadNativeAddon({ RL2_NATIVE_ADDON: '/nonexistent/rl2_kernels.node' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/\/nonexistent\/rl2_kernels\.node not found \(build it with `pnpm --filter @rl2\/engine build`/);
  });

  it('reports a file that is not a Node addon as failing to load, in one line', () => {
    const r = loadNativeAddon({ RL2_NATIVE_ADDON: new URL('./fixtures/engine-grads.json', import.meta.url).pathname });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).not.toContain('\n');
  });

  it('loads the built addon with the expected ABI when present', () => {
    const r = loadNativeAddon({});
    if (!r.ok) return; // not built on this machine: the fallback tests cover it
    expect(r.addon.abi).toBe(NATIVE_ABI);
    const c = new Float32Array(4);
    r.addon.gemm(false, false, 1, 2, 2, 2, Float32Array.of(1, 2, 3, 4), 0, Float32Array.of(1, 0, 0, 1), 0, c);
    expect(Array.from(c)).toEqual([1, 2, 3, 4]);
  });
});
