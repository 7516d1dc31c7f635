import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** One line of metrics.jsonl: a step, the wall time and scalars tagged `split/name`. */
export interface MetricRecord {
  readonly step: number;
  readonly time: number;
  readonly [tag: string]: number;
}

/** Reads metrics.jsonl, skipping blank lines; a malformed line is reported with its number. */
export function readMetricsLog(file: string): MetricRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => {
      if (!line.trim()) return [];
      try {
        return [JSON.parse(line) as MetricRecord];
      } catch {
        throw new Error(`${file}:${i + 1}: not a JSON object; delete the line or the file`);
      }
    });
}

/** Appends metric records as JSON lines; on resume, drops lines past the resumed step. */
export class MetricsLog {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  /** Keeps records with step <= `step` (a resumed run rewrites what came after its checkpoint). */
  truncateAfter(step: number): void {
    const kept = readMetricsLog(this.file).filter((r) => r.step <= step);
    writeFileSync(this.file, kept.map((r) => `${JSON.stringify(r)}\n`).join(''));
  }

  append(record: MetricRecord): void {
    appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }
}
