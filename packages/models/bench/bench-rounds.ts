// Alternating measurement rounds for `pnpm bench models`: each side measured once per round, the
// order flipping every round (load that drifts during a run then falls on both sides), and the
// median of the rounds reported with its range.
import { execSync } from 'node:child_process';

/** One measurement of one process (the last JSON line a bench child prints). */
export interface Measured {
  tokens_per_s: number;
  /** Tokens per second of process CPU time (user + system): robust to a busy machine. */
  tokens_per_cpu_s: number;
  peak_rss_mib: number;
  backend?: string;
  threads?: number;
  /** Median kernel dispatches between two generated tokens of one request. */
  dispatches_per_step?: number;
}

export type MetricKey = 'tokens_per_s' | 'tokens_per_cpu_s' | 'peak_rss_mib';

/** The machine's load line, for the table's header and footer. */
export function uptime(): string {
  try {
    return execSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return 'uptime unavailable';
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Runs `sides` once per round, in order on even rounds and reversed on odd ones. */
export function alternate<T>(rounds: number, sides: (() => T)[]): T[][] {
  const results: T[][] = sides.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) results[i]!.push(sides[i]!());
  }
  return results;
}

/** The numbers of `key` among the runs that produced a measurement. */
export function values(runs: (Measured | string)[], key: MetricKey): number[] {
  return runs.flatMap((m) => (typeof m === 'string' ? [] : [m[key]]));
}

/** `median [min-max]` of a metric over rounds, `n/a` with no measurement. */
export function summary(xs: number[], digits: number): string {
  if (xs.length === 0) return 'n/a';
  const m = median(xs).toFixed(digits);
  return xs.length === 1
    ? m
    : `${m} [${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}]`;
}
