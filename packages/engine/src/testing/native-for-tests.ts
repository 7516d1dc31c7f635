// Whether a test suite runs its native-backend tests, or skips them.
import { loadNativeAddon, type NativeLoad } from '../native-addon.js';

/**
 * Loads the native addon for tests. Where the addon is expected and does not load, throws (the
 * test file fails, naming the reason) instead of letting native tests skip: expected means
 * `RL2_REQUIRE_NATIVE=1` (CI sets it: .ci/run) or an addon file that exists but fails to load
 * (a stale or broken build). Elsewhere, e.g. a machine without a C compiler, it returns the
 * failed load and the native tests skip.
 */
export function nativeForTests(env: NodeJS.ProcessEnv = process.env): NativeLoad {
  const load = loadNativeAddon(env);
  if (load.ok) return load;
  if (env.RL2_REQUIRE_NATIVE === '1') {
    throw new Error(
      `RL2_REQUIRE_NATIVE=1, but the native addon did not load: ${load.reason}; or unset RL2_REQUIRE_NATIVE to skip the native tests`,
    );
  }
  if (load.path !== undefined) {
    throw new Error(
      `the native addon was built but does not load: ${load.reason}; ` +
        `rebuild it (\`pnpm --filter @rl2/engine build\`) or delete ${load.path} to skip the native tests`,
    );
  }
  return load;
}
