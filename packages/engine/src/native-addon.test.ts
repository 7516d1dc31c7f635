import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { thisHost } from './addon-places.js';
import { loadNativeAddon, NATIVE_ABI } from './native-addon.js';
import { nativeForTests } from './testing/native-for-tests.js';

describe('loadNativeAddon', () => {
  it('reports RL2_NO_NATIVE as the reason, without touching the file system', () => {
    expect(loadNativeAddon({ RL2_NO_NATIVE: '1' })).toEqual({
      ok: false,
      reason: 'RL2_NO_NATIVE=1 is set',
    });
  });

  it('names the missing RL2_NATIVE_ADDON file, and looks nowhere else', () => {
    const r = loadNativeAddon({ RL2_NATIVE_ADDON: '/nonexistent/rl2_kernels.node' });
    expect(r).toEqual({
      ok: false,
      reason:
        'RL2_NATIVE_ADDON=/nonexistent/rl2_kernels.node not found (unset it, or point it at a built rl2_kernels.node)',
    });
  });

  it('without a prebuilt package or a build, names both and how to get each, in one line', () => {
    const host = {
      ...thisHost(),
      packageDir: () => undefined,
      sourceBuild: '/nonexistent/build/rl2_kernels.node',
    };
    const r = loadNativeAddon({}, host);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toMatch(
      /^@rl2\/engine-\S+ is not installed \(an optional dependency of @rl2\/engine; npm skips it with --omit=optional/,
    );
    expect(r.reason).toMatch(
      /; \/nonexistent\/build\/rl2_kernels\.node not found \(build it with /,
    );
    expect(r.reason).toMatch(
      /with `pnpm --filter @rl2\/engine build` in the repository, or `node \S+engine-build-native\.mjs`/,
    );
    expect(r.reason).not.toContain('\n');
  });

  describe('a prebuilt binary that does not load', () => {
    const dir = tempDir('rl2-prebuilt-');
    writeFileSync(join(dir, 'rl2_kernels.node'), 'not an ELF file');

    it('is reported, rather than the missing source build', () => {
      const r = loadNativeAddon(
        {},
        {
          ...thisHost(),
          packageDir: () => dir,
          sourceBuild: '/nonexistent/build/rl2_kernels.node',
        },
      );
      expect(r.ok).toBe(false);
      if (!r.ok)
        expect(r.reason).toMatch(new RegExp(`^${dir}/rl2_kernels\\.node failed to load: `));
    });

    it('is passed over for a source build that loads', () => {
      const built = nativeForTests({ RL2_REQUIRE_NATIVE: process.env.RL2_REQUIRE_NATIVE });
      if (!built.ok) return; // no addon on this machine (and none required)
      const r = loadNativeAddon(
        {},
        { ...thisHost(), packageDir: () => dir, sourceBuild: built.path },
      );
      expect(r.ok && r.path).toBe(built.path);
    });
  });

  it('reports a file that is not a Node addon as failing to load, in one line', () => {
    const r = loadNativeAddon({
      RL2_NATIVE_ADDON: new URL('./fixtures/engine-grads.json', import.meta.url).pathname,
    });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).not.toContain('\n');
  });

  it('loads the built addon with the expected ABI when present', () => {
    const r = nativeForTests({ RL2_REQUIRE_NATIVE: process.env.RL2_REQUIRE_NATIVE });
    if (!r.ok) return; // not built on this machine (and not required): the fallback tests cover it
    expect(r.addon.abi).toBe(NATIVE_ABI);
    const c = new Float32Array(4);
    r.addon.gemm(
      false,
      false,
      1,
      2,
      2,
      2,
      Float32Array.of(1, 2, 3, 4),
      0,
      Float32Array.of(1, 0, 0, 1),
      0,
      c,
    );
    expect(Array.from(c)).toEqual([1, 2, 3, 4]);
  });
});

describe('nativeForTests', () => {
  const missing = '/nonexistent/rl2_kernels.node';
  const broken = new URL('./fixtures/engine-grads.json', import.meta.url).pathname;

  it('fails, naming the reason and the fix, when RL2_REQUIRE_NATIVE=1 and the addon is missing', () => {
    expect(() => nativeForTests({ RL2_REQUIRE_NATIVE: '1', RL2_NATIVE_ADDON: missing })).toThrow(
      /RL2_REQUIRE_NATIVE=1, but the native addon did not load: RL2_NATIVE_ADDON=\/nonexistent\/rl2_kernels\.node not found/,
    );
  });

  it('fails when an addon file is there but does not load, even without RL2_REQUIRE_NATIVE', () => {
    expect(() => nativeForTests({ RL2_NATIVE_ADDON: broken })).toThrow(
      /the native addon was built but does not load: .*engine-grads\.json is not the rl2 kernels addon/,
    );
  });

  it('lets native tests skip where no addon was built and none is required', () => {
    expect(nativeForTests({ RL2_NATIVE_ADDON: missing }).ok).toBe(false);
  });
});
