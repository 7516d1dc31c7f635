import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Reference,
  freePort,
  readSafetensors,
  rel,
  relTensor,
  runOnRanks,
  runSingle,
} from './rank-runs.js';
import { type CaseKind, writeTrainCase } from './train-case.js';

const TOL = 1e-5;

const references = new Map<CaseKind, Promise<Reference>>();

let caseDir: string;
let initial: Map<string, Float32Array>;

const runSingleCase = (kind: CaseKind) => runSingle(kind, caseDir, join(caseDir, `${kind}-single`));

beforeAll(() => {
  caseDir = tempDir('rl2-dp-');
  writeTrainCase(caseDir);
  initial = readSafetensors(join(caseDir, 'model/model.safetensors'));
});

describe('data-parallel training equals the single-process run', () => {
  // Every layout on the default collectives (Gloo when built); FSDP, which uses every op the
  // trainers need, also on the socket fallback. `RL2_COLLECTIVES=sockets` runs them all on it.
  it.each([
    ['sft', 'data parallel', [], undefined],
    ['dpo', 'data parallel', [], undefined],
    ['sft', 'FSDP (actor.ddp_size=1)', ['actor.ddp_size=1'], undefined],
    ['sft', 'FSDP (actor.ddp_size=1) on the socket fallback', ['actor.ddp_size=1'], 'sockets'],
  ] as const)(
    '%s on 2 processes, %s: same loss and global grad norm at both steps, same weights and AdamW state (1e-5 relative)',
    async (kind, layout, overrides, collectives) => {
      if (!references.has(kind)) references.set(kind, runSingleCase(kind));
      const single = await (references.get(kind) as Promise<Reference>);
      const saveDir = join(caseDir, `${kind}-dp2-${overrides.length}-${collectives ?? 'default'}`);
      const results = await runOnRanks(kind, 2, caseDir, saveDir, [...overrides], {
        collectives,
      });
      expect(results.map((r) => r.rank)).toEqual([0, 1]);
      expect(single.gradNorms[0]).toBeGreaterThan(kind === 'sft' ? 0.5 : 0); // sft: clipping (max_grad_norm 0.5) is active
      for (const r of results) {
        expect(r.steps).toHaveLength(2);
        r.steps.forEach((s, i) => {
          expect(
            rel(s.loss, single.losses[i] as number),
            `rank ${r.rank} step ${i + 1} loss ${s.loss} vs ${single.losses[i]}`,
          ).toBeLessThan(TOL);
          expect(
            rel(s.gradNorm, single.gradNorms[i] as number),
            `rank ${r.rank} step ${i + 1} grad norm ${s.gradNorm} vs ${single.gradNorms[i]}`,
          ).toBeLessThan(TOL);
          expect(
            s.microBatches,
            'each rank trains on its own slice of the bins',
          ).toBeGreaterThanOrEqual(1);
        });
      }
      // only rank 0 writes: one metrics line per step, and its checkpoint holds the same weights
      const lines = readFileSync(join(saveDir, 'metrics.jsonl'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(2);
      const weights = readSafetensors(join(saveDir, 'step-2/model/model.safetensors'));
      expect([...weights.keys()].sort()).toEqual([...single.weights.keys()].sort());
      const optimizer = readSafetensors(join(saveDir, 'step-2/optimizer.safetensors'));
      expect([...optimizer.keys()].sort()).toEqual([...single.optimizer.keys()].sort());
      let moved = 0;
      for (const [name, w] of [...single.weights, ...single.optimizer]) {
        const got = (weights.get(name) ?? optimizer.get(name)) as Float32Array;
        const init = initial.get(name) ?? new Float32Array(w.length);
        // relative error of the tensor, ||got - want|| / ||want||
        let num = 0;
        let den = 0;
        for (let i = 0; i < w.length; i++) {
          num += ((got[i] as number) - (w[i] as number)) ** 2;
          den += (w[i] as number) ** 2;
          if (w[i] !== init[i]) moved += 1;
        }
        expect(
          Math.sqrt(num / den),
          `${layout} ${name}: ||dp - single|| / ||single||`,
        ).toBeLessThan(TOL);
      }
      expect(moved).toBeGreaterThan(100); // the steps changed the weights
    },
    60_000,
  );

  it('FSDP resume: one step, save (AdamW state gathered), resume on 2 processes (state ' +
    're-sharded) = two steps on one process', async () => {
    if (!references.has('sft')) references.set('sft', runSingleCase('sft'));
    const single = await (references.get('sft') as Promise<Reference>);
    const saveDir = join(caseDir, 'sft-fsdp-resume');
    const first = await runOnRanks('sft', 2, caseDir, saveDir, [
      'actor.ddp_size=1',
      'trainer.max_steps=1',
    ]);
    expect(first[0]?.steps).toHaveLength(1);
    const second = await runOnRanks('sft', 2, caseDir, saveDir, [
      'actor.ddp_size=1',
      'trainer.load_ckpt_from=latest',
    ]);
    for (const r of second) {
      expect(r.steps).toHaveLength(1);
      expect(
        rel(r.steps[0]?.loss as number, single.losses[1] as number),
        `rank ${r.rank} resumed step 2 loss`,
      ).toBeLessThan(TOL);
      expect(
        rel(r.steps[0]?.gradNorm as number, single.gradNorms[1] as number),
        `rank ${r.rank} resumed step 2 grad norm`,
      ).toBeLessThan(TOL);
    }
    const weights = readSafetensors(join(saveDir, 'step-2/model/model.safetensors'));
    for (const [name, w] of single.weights) {
      const got = weights.get(name) as Float32Array;
      const err = Math.sqrt(
        w.reduce((s, x, i) => s + (x - (got[i] as number)) ** 2, 0) /
          w.reduce((s, x) => s + x * x, 0),
      );
      expect(err, `resumed ${name}`).toBeLessThan(TOL);
    }
  }, 60_000);

  it('two "nodes" of one rank on loopback (TCP between them), FSDP over both: same losses as one process', async () => {
    if (!references.has('sft')) references.set('sft', runSingleCase('sft'));
    const single = await (references.get('sft') as Promise<Reference>);
    const saveDir = join(caseDir, 'sft-two-nodes');
    const masterPort = await freePort();
    const node = (nodeRank: number) =>
      runOnRanks('sft', 1, caseDir, saveDir, ['actor.ddp_size=1'], {
        nodes: { nnodes: 2, nodeRank, masterPort },
      });
    const results = (await Promise.all([node(0), node(1)])).flat();
    expect(results.map((r) => r.rank).sort()).toEqual([0, 1]);
    for (const r of results) {
      r.steps.forEach((s, i) => {
        expect(
          rel(s.loss, single.losses[i] as number),
          `rank ${r.rank} step ${i + 1} loss`,
        ).toBeLessThan(TOL);
        expect(
          rel(s.gradNorm, single.gradNorms[i] as number),
          `rank ${r.rank} step ${i + 1} grad norm`,
        ).toBeLessThan(TOL);
      });
    }
  }, 60_000);

  it('ZeRO-3 with one sequence per step: the rank without a bin runs idle passes in step (no ' +
    'hang), same losses and weights as one process', async () => {
    const overrides = ['data.train.batch_size=1', 'actor.ddp_size=1'];
    const single = await runSingle('sft', caseDir, join(caseDir, 'sft-single-batch1'), overrides);
    const saveDir = join(caseDir, 'sft-zero3-batch1');
    const results = await runOnRanks('sft', 2, caseDir, saveDir, overrides);
    for (const r of results) {
      r.steps.forEach((s, i) => {
        expect(
          rel(s.loss, single.losses[i] as number),
          `rank ${r.rank} step ${i + 1} loss`,
        ).toBeLessThan(TOL);
        expect(
          rel(s.gradNorm, single.gradNorms[i] as number),
          `rank ${r.rank} step ${i + 1} grad norm`,
        ).toBeLessThan(TOL);
      });
    }
    // rank 0 packs the only sequence, rank 1 an idle copy of it
    expect(results.map((r) => r.steps[0]?.microBatches)).toEqual([1, 1]);
    const weights = readSafetensors(join(saveDir, 'step-2/model/model.safetensors'));
    for (const [name, w] of single.weights)
      expect(relTensor(weights.get(name), w), `ZeRO-3 batch 1 ${name}`).toBeLessThan(TOL);
  }, 60_000);
});
