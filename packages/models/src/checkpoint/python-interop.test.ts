import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { TS_WRITTEN, writeTsCheckpoints } from '../../scripts/write-ts-checkpoints.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const tmp = tempDir('rl2-models-interop-');

interface Verified {
  tensors: number;
  max_abs_weight_diff: number;
  max_abs_output_diff: number;
  generation_config: boolean;
  torch_dtype: string;
  equals_torch_rounding: boolean;
  shards: number;
  index_total_size_ok: boolean;
  largest_multi_tensor_shard?: number;
}

describe('checkpoints written here load in Python', () => {
  // fixtures/ts-written was produced by scripts/write-ts-checkpoints.ts and then read by the
  // independent Python reader + PyTorch reference (make_fixtures.py --verify-ts).
  const verified = JSON.parse(
    readFileSync(join(FIX, 'ts-written', 'python-verified.json'), 'utf8'),
  ) as Record<string, Verified>;

  it('the Python reader parsed every checkpoint and its reference model reproduced the outputs', () => {
    expect(Object.keys(verified).sort()).toEqual(TS_WRITTEN.map((t) => t[1]).sort());
    for (const [folder, v] of Object.entries(verified)) {
      expect(v.generation_config, folder).toBe(true);
      if (v.torch_dtype === 'float32') {
        expect(v.max_abs_weight_diff, folder).toBe(0);
        expect(v.max_abs_output_diff, folder).toBe(0);
      } else {
        expect(v.equals_torch_rounding, `${folder} holds what torch rounds float32 to`).toBe(true);
      }
      expect(v.index_total_size_ok, folder).toBe(true);
    }
    // max_shard_size 6KB: 12 shards, the 8 KB bf16 embeddings and lm_head alone, the others within the limit
    expect(verified['llama@bf16-sharded']?.shards).toBe(12);
    expect(verified['llama@bf16-sharded']?.largest_multi_tensor_shard).toBeLessThanOrEqual(6000);
    expect(verified['llama@fp32-sharded']?.shards).toBe(3);
  });

  it('the writer still produces byte-identical files, so that verification applies to this code', async () => {
    await writeTsCheckpoints(FIX, tmp);
    for (const [, folder] of TS_WRITTEN) {
      const files = readdirSync(join(FIX, 'ts-written', folder)).sort();
      expect(readdirSync(join(tmp, folder)).sort()).toEqual(files);
      for (const f of files) {
        const a = readFileSync(join(tmp, folder, f));
        const b = readFileSync(join(FIX, 'ts-written', folder, f));
        expect(a.equals(b), `${folder}/${f}`).toBe(true);
      }
    }
  });
});
