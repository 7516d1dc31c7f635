import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { readSafetensors, rel, relTensor, runOnRanks, runSingle } from './rank-runs.js';
import { writeTrainCase } from './train-case.js';

const TOL = 1e-5;
// merged weights in model/ so the checkpoints compare as for full training
const LORA = ['actor.lora.rank=4', 'actor.lora.alpha=8', 'actor.lora.save_merged=true'];
let caseDir: string;

beforeAll(() => {
  caseDir = tempDir('rl2-lora-dp-');
  writeTrainCase(caseDir);
});

describe('LoRA under data and context parallelism equals the single-process run', () => {
  it.each([
    ['sft', 'data parallel', []],
    ['dpo', 'data parallel', []],
    ['sft', 'context parallel (actor.cp_size=2)', ['actor.cp_size=2']],
  ] as const)(
    '%s on 2 processes, %s: same loss and grad norm at both steps, same merged weights and adapter moments (1e-5 relative)',
    async (kind, _layout, overrides) => {
      const single = await runSingle(
        kind,
        caseDir,
        join(caseDir, `${kind}-single-${overrides.length}`),
        LORA,
      );
      const saveDir = join(caseDir, `${kind}-dp2-${overrides.length}`);
      const results = await runOnRanks(kind, 2, caseDir, saveDir, [...LORA, ...overrides]);
      expect(results.map((r) => r.rank)).toEqual([0, 1]);
      for (const r of results)
        r.steps.forEach((s, i) => {
          expect(rel(s.loss, single.losses[i]!), `rank ${r.rank} step ${i + 1} loss`).toBeLessThan(
            TOL,
          );
          expect(
            rel(s.gradNorm, single.gradNorms[i]!),
            `rank ${r.rank} step ${i + 1} grad norm`,
          ).toBeLessThan(TOL);
        });
      const optimizer = readSafetensors(join(saveDir, 'step-2/optimizer.safetensors'));
      expect([...optimizer.keys()].every((k) => k.includes('.lora_'))).toBe(true);
      const weights = readSafetensors(join(saveDir, 'step-2/model/model.safetensors'));
      for (const [name, w] of [...single.weights, ...single.optimizer]) {
        const got = name.startsWith('exp_avg') ? optimizer.get(name) : weights.get(name);
        expect(relTensor(got, w), name).toBeLessThan(TOL);
      }
    },
    120_000,
  );
});
