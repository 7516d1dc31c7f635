import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { writeFileAtomic } from '@rl2/models';
import { TrainersError } from '../errors.js';
import { readMetricsLog } from '../metrics/metrics-log.js';
import { renderHtmlReport } from './html-report.js';

/** Writes RUN_DIR/report.html from RUN_DIR/metrics.jsonl and returns its path. */
export function writeReport(runDir: string): string {
  const file = join(runDir, 'metrics.jsonl');
  if (!existsSync(file)) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `no metrics.jsonl in ${runDir}; pass the run's trainer.save_dir (e.g. rl2 report ckpts/sft)`,
    );
  }
  const records = readMetricsLog(file);
  const out = join(runDir, 'report.html');
  const last = records[records.length - 1];
  const notes = [
    `Run directory: ${resolve(runDir)}`,
    `${records.length} records${last ? `, last step ${last.step}` : ''}.`,
  ];
  writeFileAtomic(out, renderHtmlReport(`rl2 run ${basename(resolve(runDir))}`, records, notes));
  return out;
}
