import '@tensorflow/tfjs-backend-cpu';
import type { TrainingBatch, TrainingSequence } from '@rl2/rollout';
import { describe, expect, it } from 'vitest';
import { computePpoAdvantages } from './ppo-advantages.js';
import { binField, packRolloutBins, scatterBinField } from './rollout-bins.js';
import { contiguousChunks } from './ppo-worker.js';

const seq = (
  rewards: number[],
  trajectoryId: number,
  length = rewards.length,
): TrainingSequence => ({
  states: Array.from({ length }, (_, t) => t + 3),
  actions: Array.from({ length }, (_, t) => t + 4),
  actionMask: Array.from({ length }, (_, t) => (t === 0 ? 0 : 1)),
  eosMask: Array.from({ length }, (_, t) => (t === length - 1 ? 1 : 0)),
  positionIds: Array.from({ length }, (_, t) => t),
  llmLogps: new Array<number>(length).fill(-1),
  rewards,
  trajectoryId,
  promptId: 0,
});

// One prompt, two responses: trajectory 0 earns 1 on its last token, trajectory 1 earns 0.
const batch: TrainingBatch = {
  sequences: [seq([0, 0, 1], 0), seq([0, 0, 0], 1)],
  trajectoryIds: [0, 1],
  responsesPerPrompt: 2,
  trajectories: 2,
};
// old - ref on every position (k1 = old - ref)
const refLogps = [
  [-1, -1.2, -0.9],
  [-1, -1, -1.3],
];
const oldLogps = [
  [-1, -1, -1],
  [-1, -1, -1],
];
const adv = {
  estimator: 'reinforce' as const,
  gamma: 1,
  lamda: 1,
  norm_var: false,
  global_norm: false,
};
const kl = (type: 'reward' | 'advantage' | 'loss' | null) => ({
  coef: 0.1,
  type,
  reward_estimator: 'k1' as const,
  loss_estimator: 'k2' as const,
  target: null,
  horizon: 10000,
});
const close = (got: number[][], want: number[][]) => {
  expect(got.length).toBe(want.length);
  got.forEach((row, i) => {
    for (const [t, x] of row.entries()) expect(x, `[${i}][${t}]`).toBeCloseTo(want[i][t], 6);
  });
};

describe('computePpoAdvantages (hand-derived)', () => {
  it('Dr. GRPO: R - mean(group) on every action token; KL = mean k1 over action tokens', () => {
    const out = computePpoAdvantages(batch, { refLogps, oldLogps }, { kl: kl(null), adv });
    close(out.advantages, [
      [0, 0.5, 0.5],
      [0, -0.5, -0.5],
    ]);
    expect(out.kl).toBeCloseTo((0.2 - 0.1 + 0 + 0.3) / 4, 6);
  });

  it('kl.type=reward subtracts coef * k1 from the token rewards before the baseline', () => {
    // returns 1 - 0.1 * (0.2 - 0.1) = 0.99 and -0.1 * 0.3 = -0.03; mean 0.48
    const out = computePpoAdvantages(batch, { refLogps, oldLogps }, { kl: kl('reward'), adv });
    close(out.advantages, [
      [0, 0.51, 0.51],
      [0, -0.51, -0.51],
    ]);
  });

  it('kl.type=advantage subtracts coef * k1 per token after the estimator', () => {
    const out = computePpoAdvantages(batch, { refLogps, oldLogps }, { kl: kl('advantage'), adv });
    close(out.advantages, [
      [0, 0.48, 0.51],
      [0, -0.5, -0.53],
    ]);
  });

  it('kl.type=loss leaves the advantages alone; grpo divides by the group std', () => {
    const out = computePpoAdvantages(
      batch,
      { refLogps, oldLogps },
      { kl: kl('loss'), adv: { ...adv, estimator: 'grpo' } },
    );
    // std of [1, 0] (unbiased) = 0.7071: 0.5 / 0.7071
    close(out.advantages, [
      [0, Math.SQRT1_2, Math.SQRT1_2],
      [0, -Math.SQRT1_2, -Math.SQRT1_2],
    ]);
  });

  it('gae returns advantages and returns per sequence (values 0, gamma = lambda = 1: returns = reward-to-go)', () => {
    const out = computePpoAdvantages(
      batch,
      {
        values: [
          [0, 0, 0],
          [0, 0, 0],
        ],
      },
      { kl: kl(null), adv: { ...adv, estimator: 'gae' } },
    );
    close(out.returns ?? [], [
      [0, 1, 1],
      [0, 0, 0],
    ]);
  });
});

describe('rollout bins', () => {
  it('keep their members, so per-sequence fields go in and come back out', () => {
    const seqs = [
      seq([0, 0, 1], 0, 3),
      seq([0, 1], 1, 2),
      seq([0, 0, 0, 0, 1], 2, 5),
      seq([0, 1], 3, 2),
    ];
    const bins = packRolloutBins(seqs, [0, 1, 2, 3], 6, 'actor.max_length_per_device');
    expect(bins.flatMap((b) => b.members).sort()).toEqual([0, 1, 2, 3]);
    const field = seqs.map((s, i) => s.states.map((_, t) => i * 10 + t));
    const back: number[][] = [];
    for (const b of bins) {
      expect(b.inputIds.length).toBeLessThanOrEqual(6);
      scatterBinField(b, binField(b, field), back, seqs);
      expect(b.positionIds.filter((p) => p === 0)).toHaveLength(b.members.length);
    }
    expect(back).toEqual(field);
    expect(() => packRolloutBins(seqs, [2], 4, 'actor.max_length_per_device')).toThrow(
      /5 tokens, more than actor.max_length_per_device=4/,
    );
  });

  it('update_per_rollout splits the rollout into contiguous chunks', () => {
    expect(contiguousChunks(5, 2)).toEqual([
      [0, 1],
      [2, 3, 4],
    ]);
    expect(contiguousChunks(2, 4)).toEqual([[0], [1]]);
  });
});
