import { join } from 'node:path';
import { launch } from '@rl2/parallel';
import { describe, expect, it } from 'vitest';
import { nativeForTests } from '@rl2/engine/testing';
import { freePort } from './rank-runs.js';

interface RankResult {
  rank: number;
  lossRef: number;
  lossPar: number;
  sharded: string[];
  localTokens: number;
  gradErrors: Record<string, number>;
  weightErrors: Record<string, number>;
}

const TOL = 1e-5;

async function runRanks(
  family: string,
  tp: number,
  cp: number,
  vocab: boolean,
  backend: 'cpu' | 'native' = 'cpu',
): Promise<RankResult[]> {
  const results: RankResult[] = [];
  const ranks = join(import.meta.dirname, 'ranks');
  await launch({
    nprocPerNode: tp * cp,
    masterPort: await freePort(),
    output: 'silent',
    killGraceMs: 2000,
    command: [
      process.execPath,
      '--import',
      'tsx',
      '--import',
      join(ranks, 'register-source.mjs'),
      join(ranks, 'parallel-decoder.rank.ts'),
    ],
    env: {
      FAMILY: family,
      TP: String(tp),
      CP: String(cp),
      VOCAB: vocab ? '1' : '0',
      BACKEND: backend,
    },
    onOutput: (_rank, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)) as RankResult);
    },
  });
  return results;
}

const layouts: { family: string; tp: number; cp: number; vocab: boolean; native?: true }[] = [
  { family: 'qwen3', tp: 1, cp: 2, vocab: false },
  // tiled context-parallel attention (flashAttention with query positions), GQA 4 over 2
  ...(nativeForTests().ok
    ? [{ family: 'qwen3', tp: 1, cp: 2, vocab: false, native: true as const }]
    : []),
  { family: 'llama', tp: 1, cp: 2, vocab: false },
  { family: 'qwen3', tp: 2, cp: 1, vocab: false },
  { family: 'llama', tp: 2, cp: 1, vocab: false },
  { family: 'qwen3', tp: 2, cp: 1, vocab: true }, // tied embedding = LM head, vocab-split
  { family: 'llama', tp: 2, cp: 1, vocab: true }, // separate embedding and LM head, both vocab-split
  { family: 'qwen3', tp: 2, cp: 2, vocab: false },
  { family: 'llama', tp: 2, cp: 2, vocab: true },
];

describe('TP / CP on the real decoder: one SFT step equals the one-process step', () => {
  for (const { family, tp, cp, vocab, native } of layouts) {
    it(`${family} TP(${tp}) x CP(${cp})${vocab ? ', vocab-parallel embedding + LM head' : ''}${native ? ', native backend' : ''}: loss, every gradient and every AdamW-updated tensor (this rank's shard) within 1e-5 relative`, async () => {
      const results = await runRanks(family, tp, cp, vocab, native ? 'native' : 'cpu');
      expect(results.map((r) => r.rank).sort()).toEqual(
        Array.from({ length: tp * cp }, (_, i) => i),
      );
      for (const r of results) {
        expect(r.localTokens).toBe(20 / cp); // 20 tokens zigzag-split over cp ranks
        // the 7 projections of each of the 2 layers are sharded under TP (plus embedding and LM
        // head, one tensor when tied, with vocab parallelism), nothing under CP alone
        expect(r.sharded.length).toBe(
          tp === 1 ? 0 : 14 + (vocab ? (family === 'qwen3' ? 1 : 2) : 0),
        );
        expect(
          Math.abs(r.lossPar - r.lossRef) / Math.abs(r.lossRef),
          `rank ${r.rank} loss ${r.lossPar} vs ${r.lossRef}`,
        ).toBeLessThan(TOL);
        expect(Object.keys(r.gradErrors).length).toBeGreaterThan(10);
        for (const [name, e] of Object.entries(r.gradErrors))
          expect(e, `rank ${r.rank} grad ${name}`).toBeLessThan(TOL);
        for (const [name, e] of Object.entries(r.weightErrors))
          expect(e, `rank ${r.rank} weight ${name}`).toBeLessThan(TOL);
      }
      const loss = Math.max(
        ...results.map((r) => Math.abs(r.lossPar - r.lossRef) / Math.abs(r.lossRef)),
      );
      const grad = Math.max(...results.flatMap((r) => Object.values(r.gradErrors)));
      const weight = Math.max(...results.flatMap((r) => Object.values(r.weightErrors)));
      console.log(
        `${family} TP(${tp}) x CP(${cp})${vocab ? ' vocab' : ''}: loss rel ${loss}, max grad rel ${grad}, max weight rel ${weight}`,
      );
    }, 60_000);
  }
});
