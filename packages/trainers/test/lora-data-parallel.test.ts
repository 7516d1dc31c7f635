import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type RankResult,
  type Reference,
  readSafetensors,
  rel,
  relTensor,
  runOnRanks,
  runSingle,
} from './rank-runs.js';
import { type CaseKind, writeTrainCase } from './train-case.js';

const TOL = 1e-5;
// merged weights in model/ so the checkpoints compare as for full training
const LORA = ['actor.lora.rank=4', 'actor.lora.alpha=8', 'actor.lora.save_merged=true'];
/** 2 layers, 4 query / 2 kv heads, 100 vocabulary rows: tp = 2 divides them. */
const TP_MODEL = { layers: 2, heads: 4, kvHeads: 2, vocabSize: 100 };
/**
 * AdamW eps 1e-6: gradient entries near eps (1e-8 by default) turn float32 rounding into update
 * differences of up to lr * noise / eps (see model-parallel.test.ts).
 */
const EPS = 'actor.eps=1e-6';
let caseDir: string;
let tpDir: string;

beforeAll(() => {
  caseDir = tempDir('rl2-lora-dp-');
  writeTrainCase(caseDir);
  tpDir = tempDir('rl2-lora-tp-');
  writeTrainCase(tpDir, TP_MODEL);
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

/** The PEFT adapter a run saved at step 2. */
const adapterOf = (saveDir: string) =>
  readSafetensors(join(saveDir, 'step-2/adapter/adapter_model.safetensors'));

/**
 * Every rank's losses and grad norms within 1e-6 of `single`'s (at `steps`), and the step-2
 * PEFT adapter, merged model and AdamW moments (adapters only) within 1e-5: the worst errors back.
 */
function expectSameLoraRun(
  results: RankResult[],
  single: Reference,
  dirs: { got: string; want: string },
  steps = [0, 1],
): { steps: number; tensors: number } {
  let worst = { steps: 0, tensors: 0 };
  for (const r of results)
    r.steps.forEach((s, k) => {
      const i = steps[k]!;
      for (const [what, got, want] of [
        ['loss', s.loss, single.losses[i]!],
        ['grad norm', s.gradNorm, single.gradNorms[i]!],
      ] as const) {
        const err = rel(got, want);
        expect(err, `rank ${r.rank} step ${i + 1} ${what}: ${got} vs ${want}`).toBeLessThan(1e-6);
        worst = { ...worst, steps: Math.max(worst.steps, err) };
      }
    });
  const adapter = adapterOf(dirs.got);
  const optimizer = readSafetensors(join(dirs.got, 'step-2/optimizer.safetensors'));
  const weights = readSafetensors(join(dirs.got, 'step-2/model/model.safetensors'));
  const want = adapterOf(dirs.want);
  expect([...adapter.keys()].sort()).toEqual([...want.keys()].sort());
  expect([...optimizer.keys()].sort()).toEqual([...single.optimizer.keys()].sort());
  for (const [got, wanted, what] of [
    [adapter, want, 'adapter'],
    [weights, single.weights, 'merged'],
    [optimizer, single.optimizer, 'AdamW'],
  ] as const)
    for (const [name, w] of wanted) {
      const err = relTensor(got.get(name), w);
      expect(err, `${what} ${name}`).toBeLessThan(TOL);
      worst = { ...worst, tensors: Math.max(worst.tensors, err) };
    }
  return worst;
}

describe('LoRA under tensor parallelism and FSDP equals the single-process run', () => {
  // the copies: the embedding split by vocabulary, q/k norms whose gradients tp sums
  const copies = ['actor.lora.modules_to_save=[embed_tokens,norm]'];
  const reference = (kind: CaseKind) =>
    runSingle(kind, tpDir, join(tpDir, `${kind}-single`), [
      EPS,
      ...LORA,
      ...copies,
      'trainer.save_freq=1',
    ]);

  it('sft on 2 processes, TP(2), resumed from the one-process step 1 (adapter and moments ' +
    're-sharded): step 2 within 1e-6, the gathered adapter, merged weights and moments within 1e-5', async () => {
    const want = await reference('sft');
    const saveDir = join(tpDir, 'sft-tp');
    const results = await runOnRanks('sft', 2, tpDir, saveDir, [
      EPS,
      ...LORA,
      ...copies,
      'actor.tp_size=2',
      `trainer.load_ckpt_from=${join(tpDir, 'sft-single', 'step-1')}`,
    ]);
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    const worst = expectSameLoraRun(
      results,
      want,
      { got: saveDir, want: join(tpDir, 'sft-single') },
      [1],
    );
    console.log(
      `LoRA sft TP(2): worst step ${worst.steps.toExponential(2)}, tensor ${worst.tensors.toExponential(2)}`,
    );
  }, 120_000);

  it('dpo on 2 processes, FSDP(2), recomputed layers, the reference the sharded base: steps ' +
    'within 1e-6, the gathered adapter, merged weights and moments within 1e-5', async () => {
    const want = await reference('dpo');
    const saveDir = join(tpDir, 'dpo-fsdp');
    const results = await runOnRanks('dpo', 2, tpDir, saveDir, [
      EPS,
      ...LORA,
      ...copies,
      'actor.ddp_size=1',
      'actor.gradient_checkpointing=true',
    ]);
    expect(results.map((r) => r.rank)).toEqual([0, 1]);
    const worst = expectSameLoraRun(results, want, {
      got: saveDir,
      want: join(tpDir, 'dpo-single'),
    });
    console.log(
      `LoRA dpo FSDP(2): worst step ${worst.steps.toExponential(2)}, tensor ${worst.tensors.toExponential(2)}`,
    );
  }, 120_000);
});
