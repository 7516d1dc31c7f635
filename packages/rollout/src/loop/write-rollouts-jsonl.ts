import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Trajectory } from '../trajectory/trajectory.js';

/** One JSONL line per trajectory: the texts, rewards, turns and token sequences. */
export interface RolloutRecord extends Trajectory {
  step: number;
  /** Dropped by dynamic filtering. */
  filtered: boolean;
}

/** Writes `records` as JSON lines to `path` (folders created), replacing the file. */
export async function writeRolloutsJsonl(
  path: string,
  records: readonly RolloutRecord[],
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(
    path,
    records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : ''),
  );
}
