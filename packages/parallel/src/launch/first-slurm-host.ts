import { ParallelError } from '../errors.js';

/**
 * First host of a Slurm hostlist (SLURM_JOB_NODELIST), which serves as MASTER_ADDR.
 * Handles the compressed form: `node[03-05,07],gpu1` -> `node03` (zero padding kept),
 * `a1,b2` -> `a1`, `host` -> `host`.
 */
export function firstSlurmHost(nodelist: string): string {
  const text = nodelist.trim();
  const m = /^([^,[]*)(\[([^\]]*)\])?/.exec(text);
  if (!text || !m || (!m[1] && !m[3])) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `SLURM_JOB_NODELIST="${nodelist}" has no host; set MASTER_ADDR to the first node's address.`,
    );
  }
  const prefix = m[1] ?? '';
  if (m[3] === undefined) return prefix;
  const first = m[3].split(',')[0]!.split('-')[0]!;
  if (!/^\d+$/.test(first)) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `SLURM_JOB_NODELIST="${nodelist}": cannot read the range "[${m[3]}]"; set MASTER_ADDR explicitly.`,
    );
  }
  return prefix + first;
}
