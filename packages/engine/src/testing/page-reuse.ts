// How a fresh node process pays for memory it frees and allocates again, with and without the
// addon's retainFreedMemory(): shared by the retain-memory test and `pnpm bench memory-reuse`.
import { execFileSync } from 'node:child_process';

/** One allocate-write-free round: its wall seconds and the minor page faults it took. */
export interface ReuseRound {
  seconds: number;
  faults: number;
}

/**
 * Runs `rounds` rounds in a fresh `node --expose-gc`: allocate a `mib` MiB Float32Array, write
 * every element, drop it, collect it. With `reserveBytes` (null: glibc's default policy) it first
 * calls the addon's retainFreedMemory(reserveBytes); returns whether that took effect and every
 * round (the first one faults fresh pages in either way, one per 2 MiB in a huge-page reserve).
 */
export function pageReuseRounds(
  addonPath: string,
  reserveBytes: number | null,
  mib: number,
  rounds: number,
): { retained: boolean; rounds: ReuseRound[] } {
  const script = `
    const addon = require(${JSON.stringify(addonPath)});
    const retained = ${reserveBytes !== null} ? addon.retainFreedMemory(${reserveBytes ?? 0}) : false;
    const rounds = [];
    (async () => {
      for (let r = 0; r < ${rounds}; r++) {
        const faults = process.resourceUsage().minorPageFault;
        const began = performance.now();
        let x = new Float32Array(${mib} * 2 ** 18);
        x.fill(1);
        rounds.push({
          seconds: (performance.now() - began) / 1000,
          faults: process.resourceUsage().minorPageFault - faults,
        });
        x = null;
        globalThis.gc();
        await new Promise((done) => setTimeout(done, 200));
      }
      console.log(JSON.stringify({ retained, rounds }));
    })();`;
  const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out) as { retained: boolean; rounds: ReuseRound[] };
}
