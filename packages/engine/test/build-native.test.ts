import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The native build never fails a user's install, but CI (RL2_REQUIRE_NATIVE=1) must not pass
// on the pure fallback. A compiler that does not exist stops the build before it writes anything.
const script = fileURLToPath(new URL('../scripts/engine-build-native.mjs', import.meta.url));
const build = (env: Record<string, string>) =>
  spawnSync(process.execPath, [script], {
    encoding: 'utf8',
    env: { ...process.env, CC: '/nonexistent/cc', ...env },
  });

describe('engine-build-native', () => {
  it('prints one line and succeeds when it cannot build', () => {
    const r = build({ RL2_REQUIRE_NATIVE: '' });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toMatch(
      /^engine-build-native: native kernels not built \(compiler "\/nonexistent\/cc" not runnable.*\); /,
    );
    expect(r.stdout.trim()).toMatch(/\); the engine will use the stock tfjs backends/);
  });

  it('fails, saying why, when RL2_REQUIRE_NATIVE=1', () => {
    const r = build({ RL2_REQUIRE_NATIVE: '1' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /native kernels not built \(compiler "\/nonexistent\/cc" not runnable.*\), and RL2_REQUIRE_NATIVE=1 requires them/,
    );
  });
});
