import { describe, expect, it } from 'vitest';
import { loadNativeAddon, NATIVE_ABI } from './native-addon.js';
import { nativeForTests } from './testing/native-for-tests.js';

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
    const r = nativeForTests({ RL2_REQUIRE_NATIVE: process.env.RL2_REQUIRE_NATIVE });
    if (!r.ok) return; // not built on this machine (and not required): the fallback tests cover it
    expect(r.addon.abi).toBe(NATIVE_ABI);
    const c = new Float32Array(4);
    r.addon.gemm(false, false, 1, 2, 2, 2, Float32Array.of(1, 2, 3, 4), 0, Float32Array.of(1, 0, 0, 1), 0, c);
    expect(Array.from(c)).toEqual([1, 2, 3, 4]);
  });
});

describe('nativeForTests', () => {
  const missing = '/nonexistent/rl2_kernels.node';
  const broken = new URL('./fixtures/engine-grads.json', import.meta.url).pathname;

  it('fails, naming the reason and the fix, when RL2_REQUIRE_NATIVE=1 and the addon is missing', () => {
    expect(() => nativeForTests({ RL2_REQUIRE_NATIVE: '1', RL2_NATIVE_ADDON: missing })).toThrow(
      /RL2_REQUIRE_NATIVE=1, but the native addon did not load: \/nonexistent\/rl2_kernels\.node not found.*pnpm --filter @rl2\/engine build/,
    );
  });

  it('fails when an addon file is there but does not load, even without RL2_REQUIRE_NATIVE', () => {
    expect(() => nativeForTests({ RL2_NATIVE_ADDON: broken })).toThrow(/the native addon was built but does not load: .*engine-grads\.json is not the rl2 kernels addon/);
  });

  it('lets native tests skip where no addon was built and none is required', () => {
    expect(nativeForTests({ RL2_NATIVE_ADDON: missing }).ok).toBe(false);
  });
});
