import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EngineError } from './errors.js';
import { initEngine } from './init-engine.js';
import { nativeForTests } from './testing/native-for-tests.js';
import { pageReuseRounds } from './testing/page-reuse.js';

const load = nativeForTests();
const MIB = 256;
const PAGES = (MIB * 2 ** 20) / 4096;

/** Minor page faults of each of 4 rounds of `pageReuseRounds` (256 MiB each). */
function faults(reserveBytes: number | null): number[] {
  const run = pageReuseRounds(load.ok ? load.path : '', reserveBytes, MIB, 4);
  expect(run.retained).toBe(reserveBytes !== null);
  return run.rounds.map((r) => r.faults);
}

const hugePages = (() => {
  try {
    return !readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8').includes('[never]');
  } catch {
    return false;
  }
})();

describe.skipIf(!load.ok || process.platform !== 'linux')('retainFreedMemory (glibc)', () => {
  it('reuses a freed 256 MiB buffer without faulting its pages in again', () => {
    // glibc's default: each large block is mapped afresh, every round faults in every page
    for (const f of faults(null).slice(1)) expect(f).toBeGreaterThan(PAGES * 0.9);
    // retained: rounds 2-4 reuse the first round's pages
    for (const f of faults(0).slice(1)) expect(f).toBeLessThan(PAGES * 0.1);
  });

  it.skipIf(!hugePages)('first touches in the huge-page reserve fault once per 2 MiB', () => {
    const [first] = faults(2 ** 30);
    expect(first).toBeLessThan(PAGES * 0.1); // 4 KiB pages: PAGES faults; 2 MiB pages: PAGES / 512
  });
});

describe('initEngine retainMemory', () => {
  it('rejects an RL2_RETAIN_MEMORY that is not 0 or 1, naming the variable', async () => {
    const err = await initEngine({
      backend: 'cpu',
      env: { RL2_RETAIN_MEMORY: 'yes' },
      logger: () => {},
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as Error).message).toMatch(/RL2_RETAIN_MEMORY="yes" must be 1 .* or 0/);
  });

  it('is off on the cpu backend (no addon to apply it), whatever was asked', async () => {
    const info = await initEngine({
      backend: 'cpu',
      retainMemory: true,
      env: {},
      logger: () => {},
    });
    expect(info.retainMemory).toBe(false);
  });
});

describe.skipIf(!load.ok || process.platform !== 'linux')(
  'initEngine retainMemory on native',
  () => {
    it('is on for training unless RL2_RETAIN_MEMORY=0, and off for inference by default', async () => {
      const start = (env: NodeJS.ProcessEnv, training: boolean) =>
        initEngine({ backend: 'native', threads: 1, training, env, logger: () => {} });
      expect((await start({ RL2_RETAIN_MEMORY: '0' }, true)).retainMemory).toBe(false);
      expect((await start({}, false)).retainMemory).toBe(false);
      expect((await start({}, true)).retainMemory).toBe(true);
      expect((await start({ RL2_RETAIN_MEMORY: '1' }, false)).retainMemory).toBe(true);
    });
  },
);
