import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { describe, expect, it } from 'vitest';
import { TS_ADAPTERS, writeTsAdapters } from '../../scripts/write-ts-adapters.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const WRITTEN = join(FIX, 'lora', 'ts-written');
const tmp = tempDir('rl2-models-peft-interop-');

describe('PEFT adapters written here, read as PEFT lays them out', () => {
  // fixtures/lora/ts-written was produced by scripts/write-ts-adapters.ts and then read by the
  // independent Python reader + PyTorch LoRA reference (make_lora_fixtures.py --verify-ts).
  const verified = JSON.parse(
    readFileSync(join(WRITTEN, 'python-verified.json'), 'utf8'),
  ) as Record<string, { tensors: number; unexpected_keys: string[]; max_abs_logit_diff: number }>;

  it("every key is base_model.model.<module>.lora_A/B.weight of a target module, and the config's scale gives the reference logits", () => {
    expect(Object.keys(verified).sort()).toEqual([...TS_ADAPTERS].sort());
    for (const [family, v] of Object.entries(verified)) {
      expect(v.unexpected_keys, family).toEqual([]);
      expect(v.max_abs_logit_diff, family).toBeLessThanOrEqual(1e-6);
    }
    expect(verified.qwen3?.tensors).toBe(2 * 7 * 2); // A and B, all seven projections, 2 layers
  });

  it('the writer still produces byte-identical files, so that verification applies to this code', async () => {
    await writeTsAdapters(FIX, tmp);
    for (const family of TS_ADAPTERS) {
      const files = readdirSync(join(WRITTEN, family)).sort();
      expect(readdirSync(join(tmp, family)).sort()).toEqual(files);
      for (const f of files)
        expect(
          readFileSync(join(tmp, family, f)).equals(readFileSync(join(WRITTEN, family, f))),
          `${family}/${f}`,
        ).toBe(true);
    }
  });
});
