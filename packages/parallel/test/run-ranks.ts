// Test helper: start a rank script under `launch` (node --import tsx) and collect its RESULT lines.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type LaunchOptions, launch } from '../src/index.js';

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

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
