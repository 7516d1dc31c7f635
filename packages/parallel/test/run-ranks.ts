// Test helper: start a rank script under `launch` (node --import tsx) and collect its RESULT lines.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type LaunchOptions, launch } from '../src/index.js';

/**
 * A TCP port that was free a moment ago, drawn below Linux's ephemeral range (32768+) so that
 * the ranks' own listeners (port 0) and other tests' connections cannot take it in between.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
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
