import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import type { MetricRecord } from '../metrics/metrics-log.js';
import { chartSeries, renderHtmlReport } from './html-report.js';
import { writeReport } from './write-report.js';

const records: MetricRecord[] = [
  { step: 1, time: 0, 'train/loss': 2, 'train/lr': 1e-5 },
  { step: 2, time: 1, 'train/loss': 1.5, 'train/lr': 1e-5 },
  { step: 2, time: 1, 'test/loss': 1.7, 'test/accuracy': 0.5 },
  { step: 3, time: 2, 'train/loss': 1 },
];

describe('HTML report', () => {
  it('puts train and test of one metric on one chart', () => {
    const charts = chartSeries(records);
    expect([...charts.keys()]).toEqual(['loss', 'lr', 'accuracy']);
    expect(charts.get('loss')?.map((s) => s.name)).toEqual(['train/loss', 'test/loss']);
    expect(charts.get('loss')?.[0].points).toEqual([
      [1, 2],
      [2, 1.5],
      [3, 1],
    ]);
  });

  it('is self-contained: inline SVG, no scripts or remote URLs', () => {
    const html = renderHtmlReport('run <x>', records);
    expect(html).toContain('<svg');
    expect(html).toContain('run &lt;x&gt;');
    expect(html).not.toMatch(/<script|src="http|href="http|<link/);
    expect((html.match(/<figure>/g) ?? []).length).toBe(3);
    // the loss polyline has 3 points, falling from left to right (SVG y grows downward)
    const pts =
      /<polyline[^>]*points="([^"]+)"/
        .exec(html)?.[1]
        .split(' ')
        .map((p) => p.split(',').map(Number)) ?? [];
    expect(pts).toHaveLength(3);
    expect(pts[0][1]).toBeLessThan(pts[2][1]);
  });

  it('writeReport reads RUN_DIR/metrics.jsonl and names a missing file', () => {
    const dir = tempDir('rl2-report-');
    expect(() => writeReport(dir)).toThrow(/metrics\.jsonl/);
    writeFileSync(
      join(dir, 'metrics.jsonl'),
      `${records.map((r) => JSON.stringify(r)).join('\n')}\n`,
    );
    const out = writeReport(dir);
    expect(readFileSync(out, 'utf8')).toContain('train/loss');
  });
});
