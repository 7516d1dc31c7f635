// Whether a test suite runs its WebGPU tests (on a hardware or a software adapter), or skips them.
import { execFileSync } from 'node:child_process';

export type WebGpuForTests = { ok: true } | { ok: false; reason: string };

const PROBE = `
const { create } = await import('webgpu');
const adapter = await create([]).requestAdapter();
process.stdout.write(adapter ? 'adapter' : 'none');
process.exit(0);`;

let probed: WebGpuForTests | undefined;

/**
 * Finds out, in a child process (Dawn's start-up lines stay out of the test's output), whether
 * Dawn gets a WebGPU adapter here. Where one is expected and none comes, throws (the test file
 * fails, naming why) instead of letting the WebGPU tests skip: expected means
 * `RL2_REQUIRE_WEBGPU=1` (CI sets it: .ci/run; tooling/scripts/setup.sh installs Mesa's lavapipe).
 */
export function webgpuForTests(env: NodeJS.ProcessEnv = process.env): WebGpuForTests {
  probed ??= probe();
  if (!probed.ok && env.RL2_REQUIRE_WEBGPU === '1')
    throw new Error(
      `RL2_REQUIRE_WEBGPU=1, but there is no WebGPU adapter: ${probed.reason}; install a Vulkan ` +
        'driver (tooling/scripts/setup.sh installs Mesa lavapipe), or unset RL2_REQUIRE_WEBGPU to skip',
    );
  return probed;
}

function probe(): WebGpuForTests {
  try {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], {
      cwd: import.meta.dirname,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
    });
    return out === 'adapter' ? { ok: true } : { ok: false, reason: 'Dawn found no Vulkan adapter' };
  } catch (err) {
    return {
      ok: false,
      reason: `the webgpu probe failed: ${(err as Error).message.split('\n')[0]}`,
    };
  }
}
