import { describe, expect, it } from 'vitest';
import { type AddonHost, addonPlaces, platformKey, prebuiltPackage } from './addon-places.js';

const linux: AddonHost = {
  platform: 'linux',
  arch: 'x64',
  musl: false,
  packageDir: (name) =>
    name === '@rl2/engine-linux-x64-gnu'
      ? '/app/node_modules/@rl2/engine-linux-x64-gnu'
      : undefined,
  sourceBuild: '/app/node_modules/@rl2/engine/build/rl2_kernels.node',
  buildScript: '/app/node_modules/@rl2/engine/scripts/engine-build-native.mjs',
};

describe('platformKey / prebuiltPackage', () => {
  it('names platforms as esbuild and swc do, with the libc on Linux', () => {
    expect(prebuiltPackage(linux)).toBe('@rl2/engine-linux-x64-gnu');
    expect(platformKey({ platform: 'linux', arch: 'arm64', musl: true })).toBe('linux-arm64-musl');
    expect(platformKey({ platform: 'darwin', arch: 'arm64', musl: false })).toBe('darwin-arm64');
    expect(platformKey({ platform: 'win32', arch: 'x64', musl: false })).toBe('win32-x64');
  });
});

describe('addonPlaces', () => {
  it('tries the prebuilt package, then the source build', () => {
    expect(addonPlaces({}, linux).map((p) => [p.kind, p.label, p.path])).toEqual([
      [
        'prebuilt',
        '@rl2/engine-linux-x64-gnu',
        '/app/node_modules/@rl2/engine-linux-x64-gnu/rl2_kernels.node',
      ],
      ['source', 'build/rl2_kernels.node', '/app/node_modules/@rl2/engine/build/rl2_kernels.node'],
    ]);
  });

  it('uses RL2_NATIVE_ADDON alone when set', () => {
    expect(
      addonPlaces({ RL2_NATIVE_ADDON: '/x/rl2_kernels.node' }, linux).map((p) => [
        p.kind,
        p.label,
        p.path,
      ]),
    ).toEqual([['env', 'RL2_NATIVE_ADDON', '/x/rl2_kernels.node']]);
  });

  it('says why the prebuilt place is empty: not installed for this platform, or installed without the binary', () => {
    const mac = { ...linux, platform: 'darwin' as const, arch: 'arm64' };
    const [prebuilt] = addonPlaces({}, mac);
    expect(prebuilt).toEqual({
      kind: 'prebuilt',
      label: '@rl2/engine-darwin-arm64',
      missing: expect.stringMatching(
        /^@rl2\/engine-darwin-arm64 is not installed \(an optional dependency/,
      ),
    });
    const empty = addonPlaces({}, { ...linux })[0];
    expect(empty?.missing).toBe('@rl2/engine-linux-x64-gnu has no rl2_kernels.node');
  });

  it('tells how to build from source, with the path of the build script', () => {
    const source = addonPlaces({}, linux)[1];
    expect(source?.missing).toContain(
      '`node /app/node_modules/@rl2/engine/scripts/engine-build-native.mjs`',
    );
  });
});
