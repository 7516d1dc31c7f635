import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nativeForTests } from '@rl2/engine/testing';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeRandomCheckpoint } from '../src/model-init/random-checkpoint.js';
import type { MetricRecord } from '../src/metrics/metrics-log.js';
import { runSft } from '../src/sft/run-sft.js';
import { readSafetensors, rel, relTensor, runOnRanks } from './rank-runs.js';
import { caseConfig, CHAR_TOKENIZER, writeTrainCase } from './train-case.js';

// LoRA SFT with the base kept in bfloat16 (actor.lora.base_dtype) under TP(2) on 2 processes
// against one process with the same 16-bit base: each rank multiplies by its 16-bit shard of
// every projection (rows of q/k/v/gate/up, input columns of o/down) and of the tied embedding /
// LM head (vocabulary rows), so the runs differ only in float32 summation order.
const hasNative = nativeForTests().ok;
let dir: string;

beforeAll(() => {
  dir = tempDir('rl2-lora-bf16-tp-');
  writeTrainCase(dir, { rows: 16 });
  // 4 query / 2 kv heads, 100 vocabulary rows: tp = 2 divides them
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir: CHAR_TOKENIZER,
    outDir: join(dir, 'model16'),
    hiddenSize: 16,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    vocabSize: 100,
    tieWordEmbeddings: true,
    seed: 5,
    dtype: 'bfloat16',
  });
}, 60_000);

const overrides = () => [
  `actor.model_name=${join(dir, 'model16')}`,
  'actor.lora.rank=4',
  'actor.lora.alpha=8',
  'actor.lora.base_dtype=bfloat16',
  // AdamW eps 1e-4: at 1e-6 a lora_B entry whose step-1 gradient is near eps turns float32
  // rounding into an update difference of up to 8.5e-6 relative (see lora-data-parallel.test.ts)
  'actor.eps=1e-4',
  'trainer.backend=native',
];

/** Bytes of the BF16 matrices a frozen base keeps (2-D, the tied head read as the embedding). */
function bf16MatrixBytes(file: string): { count: number; bytes: number } {
  const buf = readFileSync(file);
  const header = JSON.parse(
    buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString(),
  ) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const mats = Object.entries(header).filter(
    ([n, t]) => n !== '__metadata__' && t.dtype === 'BF16' && t.shape.length === 2,
  );
  return {
    count: mats.length,
    bytes: mats.reduce((a, [, t]) => a + t.data_offsets[1] - t.data_offsets[0], 0),
  };
}

describe.skipIf(!hasNative)('LoRA on a bfloat16 base under tensor parallelism', () => {
  it('sft on 2 processes, TP(2): each rank holds half the 16-bit base; steps within 1e-6, the adapter within 1e-5', async () => {
    const losses: number[] = [];
    const gradNorms: number[] = [];
    let said = '';
    const single = join(dir, 'single');
    await runSft(caseConfig('sft', dir, single, overrides()), {
      stdout: {
        write: (chunk: string) => {
          said += chunk;
          return true;
        },
      } as unknown as NodeJS.WriteStream,
      onStep: (r: MetricRecord) => {
        losses.push(r['train/loss'] as number);
        gradNorms.push(r['train/grad_norm'] as number);
      },
    });
    const base = bf16MatrixBytes(join(dir, 'model16', 'model.safetensors'));
    expect(said).toContain(
      `LoRA base kept in bfloat16 (actor.lora.base_dtype): ${base.count} matrices`,
    );
    const saveDir = join(dir, 'tp');
    const results = await runOnRanks('sft', 2, dir, saveDir, [...overrides(), 'actor.tp_size=2']);
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    let worst = { steps: 0, adapter: 0 };
    for (const r of results) {
      expect(r.frozenShard).toContain(
        `LoRA base tp rank ${r.rank} of 2: ${base.count} bfloat16 shards, ${base.bytes / 2} bytes`,
      );
      r.steps.forEach((s, i) => {
        for (const [what, got, want] of [
          ['loss', s.loss, losses[i]!],
          ['grad norm', s.gradNorm, gradNorms[i]!],
        ] as const) {
          const err = rel(got, want);
          expect(err, `rank ${r.rank} step ${i + 1} ${what}: ${got} vs ${want}`).toBeLessThan(1e-6);
          worst = { ...worst, steps: Math.max(worst.steps, err) };
        }
      });
      expect(r.steps.length).toBe(2);
    }
    const adapter = (d: string) =>
      readSafetensors(join(d, 'step-2/adapter/adapter_model.safetensors'));
    const [got, want] = [adapter(saveDir), adapter(single)];
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [name, w] of want) {
      const err = relTensor(got.get(name), w);
      expect(err, name).toBeLessThan(1e-5);
      worst = { ...worst, adapter: Math.max(worst.adapter, err) };
    }
    console.log(
      `LoRA sft bf16 base TP(2): worst step ${worst.steps.toExponential(2)}, adapter ${worst.adapter.toExponential(2)}`,
    );
  }, 60_000);
});
