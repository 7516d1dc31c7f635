import { join, resolve } from 'node:path';
import { initEngine } from '@rl2/engine';
import { type DecoderModel, loadModel, tokenLogits } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TrainingItem } from '../dataset/training-item.js';
import { dpoObjective } from '../dpo/dpo-objective.js';
import { writeRandomCheckpoint } from '../model-init/random-checkpoint.js';
import { rmObjective } from '../rm/rm-objective.js';
import { sftObjective } from '../sft/sft-objective.js';
import { accumulateGradients } from './gradient-step.js';
import type { Objective } from './objective.js';
import { packBins, stepTotals } from '../bins/pack-bins.js';

let model: DecoderModel;
let ref: DecoderModel;
let critic: DecoderModel;

beforeAll(async () => {
  await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
  const dir = join(tempDir('rl2-grad-'), 'model');
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir: resolve(import.meta.dirname, '../../test/fixtures/char-tokenizer'),
    outDir: dir,
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    seed: 3,
  });
  model = (await loadModel(dir)).model;
  ref = (await loadModel(dir)).model;
  critic = (await loadModel(dir, { head: 'value' })).model;
  // a reference different from the policy, and a non-zero value head, so every term is live
  for (const v of ref.params.values()) v.assign(tf.mul(v, 0.9));
  critic.params.get('score.weight')?.assign(tf.randomNormal([1, 16], 0, 0.5, 'float32', 7));
});

/** Sequences of lengths `lens` with a loss mask on the second half (pseudo-random tokens). */
function items(lens: number[], groupSize: 1 | 2): TrainingItem[] {
  const seq = (n: number, salt: number) => ({
    inputIds: Array.from({ length: n }, (_, i) => 3 + ((i * 7 + salt * 13) % 90)),
    positionIds: Array.from({ length: n }, (_, i) => i),
    targets: Array.from({ length: n }, (_, i) => 3 + ((i * 5 + salt * 11) % 90)),
    lossMask: Array.from({ length: n }, (_, i) => (i >= n / 2 ? 1 : 0)),
  });
  const out: TrainingItem[] = [];
  for (let i = 0; i < lens.length; i += groupSize) {
    out.push({
      origin: `row ${i}`,
      sequences: lens.slice(i, i + groupSize).map((n, k) => seq(n, i + k)),
    });
  }
  return out;
}

async function gradsFor<P>(
  objective: Objective<P>,
  m: DecoderModel,
  its: TrainingItem[],
  budget: number,
) {
  const bins = packBins(its, budget, objective.groupSize, 'test');
  const res = await accumulateGradients(
    bins,
    stepTotals(bins),
    objective,
    Object.fromEntries(m.params),
  );
  const flat = Object.fromEntries(
    Object.entries(res.grads).map(([k, g]) => [k, Array.from(g.dataSync())]),
  );
  tf.dispose(Object.values(res.grads));
  return { bins: bins.length, loss: res.loss, metrics: res.metrics, flat };
}

function expectSameGradients(a: Record<string, number[]>, b: Record<string, number[]>) {
  expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
  let maxAbs = 0;
  for (const k of Object.keys(a)) for (const x of a[k]) maxAbs = Math.max(maxAbs, Math.abs(x));
  expect(maxAbs).toBeGreaterThan(1e-6);
  for (const k of Object.keys(a))
    for (const [i, x] of a[k].entries())
      expect(Math.abs(x - b[k][i])).toBeLessThan(1e-5 + 1e-4 * maxAbs);
}

describe('global-mean scaling: one micro-batch or many give the same loss and gradients', () => {
  it.each(['token', 'sequence'] as const)('SFT avg_level=%s', async (avgLevel) => {
    const its = items([6, 9, 4, 12, 7, 5], 1);
    const objective = sftObjective(model, { avgLevel, recompute: false });
    const one = await gradsFor(objective, model, its, 64);
    const many = await gradsFor(objective, model, its, 13);
    expect(one.bins).toBe(1);
    expect(many.bins).toBeGreaterThan(2);
    expect(many.loss).toBeCloseTo(one.loss, 5);
    expectSameGradients(one.flat, many.flat);
  });

  it('SFT token mean equals the hand-computed mean NLL over all trained tokens', async () => {
    const its = items([6, 9], 1);
    const objective = sftObjective(model, { avgLevel: 'token', recompute: false });
    const { loss } = await gradsFor(objective, model, its, 64);
    // independent: per-sequence forward, mean of -logp over trained tokens
    let sum = 0;
    let count = 0;
    for (const it of its) {
      const q = it.sequences[0];
      // full logits of the sequence alone (no packing), log-softmax by hand
      const lp = tf.tidy(() => {
        const logits = tokenLogits(model, { inputIds: q.inputIds, positionIds: q.positionIds });
        return tf.logSoftmax(logits).arraySync() as number[][];
      });
      q.lossMask.forEach((m, t) => {
        if (m) {
          sum -= lp[t][q.targets[t]];
          count += 1;
        }
      });
    }
    expect(loss).toBeCloseTo(sum / count, 5);
  });

  it('RM (pairs kept together)', async () => {
    const its = items([6, 8, 5, 9, 7, 4, 10, 6], 2);
    const objective = rmObjective(critic, { recompute: false });
    const one = await gradsFor(objective, critic, its, 64);
    const many = await gradsFor(objective, critic, its, 17);
    expect(many.bins).toBeGreaterThan(1);
    expect(many.loss).toBeCloseTo(one.loss, 5);
    expect(many.metrics.accuracy).toBeCloseTo(one.metrics.accuracy ?? Number.NaN, 6);
    expectSameGradients(one.flat, many.flat);
  });

  it('DPO with a reference model; gradient checkpointing changes nothing', async () => {
    const its = items([6, 8, 5, 9, 7, 4, 10, 6], 2);
    const opts = {
      variant: 'dpo' as const,
      beta: 0.5,
      labelSmoothing: 0,
      simpoGamma: null,
      nllCoef: 0,
      recompute: false,
    };
    const one = await gradsFor(dpoObjective(model, ref, opts), model, its, 64);
    const many = await gradsFor(
      dpoObjective(model, ref, { ...opts, recompute: true }),
      model,
      its,
      17,
    );
    expect(many.bins).toBeGreaterThan(1);
    expect(many.loss).toBeCloseTo(one.loss, 5);
    expect(one.metrics.rewardsMargin).not.toBe(0);
    expectSameGradients(one.flat, many.flat);
  });
});
