// Where the native addon (rl2_kernels.node) may be, in the order the engine tries them:
// RL2_NATIVE_ADDON (alone when set), the prebuilt-binary package for this platform
// (@rl2/engine-linux-x64-gnu, an optional dependency), then the source build (build/).
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ADDON_FILE = 'rl2_kernels.node';

/**
 * One place to look: `path` when there is one to try, else `missing` says why not; `label` names
 * it on the engine's start line (`RL2_NATIVE_ADDON`, `@rl2/engine-linux-x64-gnu`, `build/rl2_kernels.node`).
 */
export type AddonPlace = {
  kind: 'env' | 'prebuilt' | 'source';
  label: string;
  path?: string;
  missing: string;
};

/** What `addonPlaces` reads from the machine (injected in tests). */
export interface AddonHost {
  platform: NodeJS.Platform;
  arch: string;
  /** Linux with musl instead of glibc (Alpine). */
  musl: boolean;
  /** The folder of an installed package, or undefined. */
  packageDir(name: string): string | undefined;
  /** build/rl2_kernels.node of this package. */
  sourceBuild: string;
  /** The script that builds it. */
  buildScript: string;
}

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64`: the esbuild/swc naming. */
export function platformKey(host: Pick<AddonHost, 'platform' | 'arch' | 'musl'>): string {
  const libc = host.platform === 'linux' ? (host.musl ? '-musl' : '-gnu') : '';
  return `${host.platform}-${host.arch}${libc}`;
}

/** The optional dependency holding the prebuilt binary for `host`: `@rl2/engine-linux-x64-gnu`. */
export function prebuiltPackage(host: Pick<AddonHost, 'platform' | 'arch' | 'musl'>): string {
  return `@rl2/engine-${platformKey(host)}`;
}

/** The places to try, in order, with why each may be empty. */
export function addonPlaces(env: NodeJS.ProcessEnv, host: AddonHost = thisHost()): AddonPlace[] {
  if (env.RL2_NATIVE_ADDON) {
    return [
      {
        kind: 'env',
        label: 'RL2_NATIVE_ADDON',
        path: env.RL2_NATIVE_ADDON,
        missing: `RL2_NATIVE_ADDON=${env.RL2_NATIVE_ADDON} not found (unset it, or point it at a built ${ADDON_FILE})`,
      },
    ];
  }
  const name = prebuiltPackage(host);
  const dir = host.packageDir(name);
  return [
    {
      kind: 'prebuilt',
      label: name,
      ...(dir ? { path: join(dir, ADDON_FILE) } : {}),
      missing: dir
        ? `${name} has no ${ADDON_FILE}`
        : `${name} is not installed (an optional dependency of @rl2/engine; npm skips it with ` +
          `--omit=optional, and it is published for linux-x64-gnu only)`,
    },
    {
      kind: 'source',
      label: `build/${ADDON_FILE}`,
      path: host.sourceBuild,
      missing:
        `${host.sourceBuild} not found ` +
        `(build it with \`pnpm --filter @rl2/engine build\` in the repository, ` +
        `or \`node ${host.buildScript}\`; needs libopenblas-dev and a C compiler)`,
    },
  ];
}

/** The running process's platform, and this package's folders (from src/ or dist/ alike). */
export function thisHost(): AddonHost {
  const require = createRequire(import.meta.url);
  return {
    platform: process.platform,
    arch: process.arch,
    musl:
      process.platform === 'linux' &&
      existsSync('/lib') &&
      readdirSync('/lib').some((f) => f.startsWith('ld-musl-')),
    packageDir(name) {
      try {
        return dirname(require.resolve(`${name}/package.json`));
      } catch {
        return undefined;
      }
    },
    sourceBuild: fileURLToPath(new URL(`../build/${ADDON_FILE}`, import.meta.url)),
    buildScript: fileURLToPath(new URL('../scripts/engine-build-native.mjs', import.meta.url)),
  };
}
