import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Must equal kAbi in native/addon.cc; a mismatch means a stale build. */
export const GLOO_ABI = 1;

/** Op codes and reduce codes of native/group.h. */
export const GLOO_OP = {
  connect: -1,
  allReduce: 0,
  allGather: 1,
  reduceScatter: 2,
  broadcast: 3,
  barrier: 4,
  send: 5,
  recv: 6,
} as const;
export const GLOO_REDUCE = { sum: 0, max: 1, avg: 2 } as const;
/** `failure` of a failed op (native/group.h Failure). */
export const GLOO_FAILURE = { timeout: 1, peerLost: 2, rendezvous: 3, invalid: 4 } as const;
/** Answers of `query` besides an op count (native/store-server.h). */
export const GLOO_STATUS = { noGroup: -1, gone: -2, noAnswer: -3, neverJoined: -4 } as const;

export interface GlooFailure {
  failure: number;
  message: string;
  seq: number;
}

/** The functions of build/rl2_gloo.node (native/addon.cc). */
export interface GlooAddon {
  abi: number;
  glooVersion: string;
  host(port: number, worldSize: number): void;
  connect(
    host: string,
    port: number,
    rank: number,
    timeoutMs: number,
    rendezvousTimeoutMs: number,
    localAddr: string,
  ): string;
  storeSet(key: string, value: string): void;
  storeGet(key: string): string;
  storeMissing(keys: string[]): string[];
  group(key: string, groupRank: number, groupSize: number): number;
  submit(
    group: number,
    op: number,
    input: Float32Array,
    output: Float32Array | null,
    arg: number,
  ): number;
  wait(group: number, ticket: number): GlooFailure | null;
  query(groupKey: string): number[];
  close(): void;
}

export type GlooLoad = { ok: true; addon: GlooAddon; path: string } | { ok: false; reason: string };

let cached: GlooLoad | undefined;

/**
 * How to build the addon where this package is: its build script ships in the npm package
 * (an npm user has no pnpm workspace to run); in the repository `pnpm build` runs it too.
 */
export function howToBuild(): string {
  const script = ['../scripts/parallel-build-native.mjs', '../../scripts/parallel-build-native.mjs']
    .map((p) => fileURLToPath(new URL(p, import.meta.url)))
    .find((p) => existsSync(p));
  return (
    'install libgloo-dev and g++ (Debian/Ubuntu), then build it with ' +
    `\`node ${script ?? 'node_modules/@rl2/parallel/scripts/parallel-build-native.mjs'}\`` +
    ' (in the rl2 repository `pnpm build` does it)'
  );
}

/**
 * Finds and loads rl2_gloo.node: `RL2_GLOO_ADDON` if set, else build/ of this package (from src/
 * in tests and from dist/ when bundled). Loaded once per process.
 */
export function loadGlooAddon(env: NodeJS.ProcessEnv = process.env): GlooLoad {
  if (cached) return cached;
  // dist/index.js and src/comm/gloo-addon.ts sit at different depths below the package
  const candidates = env.RL2_GLOO_ADDON
    ? [env.RL2_GLOO_ADDON]
    : ['../build/rl2_gloo.node', '../../build/rl2_gloo.node'].map((p) =>
        fileURLToPath(new URL(p, import.meta.url)),
      );
  const path = candidates[0]!;
  const found = candidates.find((p) => existsSync(p));
  if (!found) return { ok: false, reason: `${path} not found (${howToBuild()})` };
  try {
    const addon = createRequire(import.meta.url)(found) as GlooAddon;
    if (addon.abi !== GLOO_ABI) {
      return {
        ok: false,
        reason: `${found} is a stale build (abi ${addon.abi}, expected ${GLOO_ABI}); ${howToBuild()}`,
      };
    }
    cached = { ok: true, addon, path: found };
    return cached;
  } catch (err) {
    return {
      ok: false,
      reason: `${found} failed to load: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`,
    };
  }
}
