// Test helper: start a rank script under `launch` (node --import tsx) and collect its RESULT lines.
import { join } from 'node:path';
import { loadGlooAddon } from '../src/comm/gloo-addon.js';
import { type LaunchOptions, freePort, launch } from '../src/index.js';

export { freePort };

const gloo = loadGlooAddon();
if (!gloo.ok && process.env.RL2_REQUIRE_GLOO === '1')
  throw new Error(`RL2_REQUIRE_GLOO=1 but ${gloo.reason}`);
/** The collectives the rank tests run on: Gloo when its addon is built, and the socket fallback. */
export const COLLECTIVES: readonly ('gloo' | 'sockets')[] = gloo.ok
  ? ['gloo', 'sockets']
  : ['sockets'];

export interface RankResults<T> {
  results: T[];
  error?: Error;
}

/** Launch `script` (a file in test/ranks) on `nprocPerNode` ranks; never throws, returns the error. */
export async function runRanks<T = Record<string, unknown>>(
  script: string,
  o: Partial<LaunchOptions> & { nprocPerNode: number },
): Promise<RankResults<T>> {
  const results: T[] = [];
  const file = join(import.meta.dirname, 'ranks', script);
  try {
    await launch({
      masterPort: o.masterPort ?? (await freePort()),
      output: 'silent',
      killGraceMs: 2000,
      ...o,
      command: [process.execPath, '--import', 'tsx', file],
      onOutput: (_rank, stream, line) => {
        if (stream === 'stdout' && line.startsWith('RESULT '))
          results.push(JSON.parse(line.slice(7)) as T);
      },
    });
    return { results };
  } catch (error) {
    return { results, error: error as Error };
  }
}
