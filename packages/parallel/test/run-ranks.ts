// Test helper: start a rank script under `launch` (node --import tsx) and collect its RESULT lines.
import { join } from 'node:path';
import { type LaunchOptions, freePort, launch } from '../src/index.js';

export { freePort };

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
        if (stream === 'stdout' && line.startsWith('RESULT ')) results.push(JSON.parse(line.slice(7)) as T);
      },
    });
    return { results };
  } catch (error) {
    return { results, error: error as Error };
  }
}
