import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

// `kill -9` of the launcher runs none of its handlers: its ranks (each in its own process
// group) used to run on as orphans (issue 26 item 13).
describe.runIf(process.platform !== 'win32')('a launcher killed with SIGKILL', () => {
  it('takes its ranks with it, saying so on stderr', async () => {
    const launcher = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'launch-sleepers.ts')],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    launcher.stdout.on('data', (b: Buffer) => {
      stdout += String(b);
    });
    launcher.stderr.on('data', (b: Buffer) => {
      stderr += String(b);
    });
    const pids = () => [...stdout.matchAll(/\[rank \d\] pid (\d+)/g)].map((m) => Number(m[1]));
    try {
      expect(await waitFor(() => pids().length === 2, 20_000), stderr).toBe(true);
      launcher.kill('SIGKILL');
      expect(await waitFor(() => !pids().some(alive), 10_000), `ranks ${pids()} alive`).toBe(true);
      expect(await waitFor(() => stderr.includes('is gone'), 2000)).toBe(true);
      expect(stderr).toContain(`rl2 launch (pid ${launcher.pid}) is gone: stopping its ranks [`);
    } finally {
      for (const pid of pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 40_000);
});
