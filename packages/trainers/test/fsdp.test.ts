import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch } from '@rl2/parallel';
import { describe, expect, it } from 'vitest';
import type { MetricRecord } from '../src/metrics/metrics-log.js';
import { runSft } from '../src/sft/run-sft.js';
import { caseConfig, writeTrainCase } from './train-case.js';
import { freePort } from './rank-runs.js';

interface RankResult {
  rank: number;
  loss: number;
  gradNorm: number;
  errors: Record<string, number>;
  stateFloats: number;
  totalFloats: number;
}

const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-12);
const TOL = 1e-5;

describe('FSDP(2) SFT step equals the one-process trainer step', () => {
  it('loss, global grad norm and every updated tensor within 1e-5 relative; AdamW state sharded', async () => {
    const caseDir = mkdtempSync(join(tmpdir(), 'rl2-fsdp-'));
    writeTrainCase(caseDir);
    const saveDir = join(caseDir, 'single');
    let ref: MetricRecord | undefined;
    await runSft(caseConfig('sft', caseDir, saveDir, ['trainer.max_steps=1']), { stdout: { write: () => true } as unknown as NodeJS.WriteStream, onStep: (r) => (ref = r) });
    const want = ref as MetricRecord;

    const results: RankResult[] = [];
    const ranks = join(import.meta.dirname, 'ranks');
    await launch({
      nprocPerNode: 2,
      masterPort: await freePort(),
      output: 'silent',
      killGraceMs: 2000,
      command: [process.execPath, '--import', 'tsx', '--import', join(ranks, 'register-source.mjs'), join(ranks, 'fsdp-sft.rank.ts')],
      env: { CASE_DIR: caseDir, REF_DIR: join(saveDir, 'step-1/model') },
      onOutput: (_rank, stream, line) => {
        if (stream === 'stdout' && line.startsWith('RESULT ')) results.push(JSON.parse(line.slice(7)) as RankResult);
      },
    });
    expect(results.map((r) => r.rank).sort()).toEqual([0, 1]);
    for (const r of results) {
      expect(rel(r.loss, want['train/loss'] as number), `rank ${r.rank} loss ${r.loss} vs ${want['train/loss']}`).toBeLessThan(TOL);
      expect(rel(r.gradNorm, want['train/grad_norm'] as number), `rank ${r.rank} grad norm ${r.gradNorm} vs ${want['train/grad_norm']}`).toBeLessThan(TOL);
      expect(Object.keys(r.errors).length).toBeGreaterThan(5);
      for (const [name, e] of Object.entries(r.errors)) expect(e, `rank ${r.rank} ${name}`).toBeLessThan(TOL);
      // each rank holds about half of AdamW's m and v (shards padded to equal length)
      expect(r.stateFloats).toBeLessThan(r.totalFloats * 1.1);
      expect(r.stateFloats).toBeGreaterThanOrEqual(r.totalFloats);
    }
  }, 60_000);
});
