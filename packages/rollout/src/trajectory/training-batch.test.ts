import '@tensorflow/tfjs-backend-cpu';
import { computeGae, computeReinforceAdvantages } from '@rl2/algos';
import { setBackend, tensor1d, tensor2d } from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { padTrainingBatch } from './pad-training-batch.js';
import { toTrainingBatch } from './to-training-batch.js';
import type { Trajectory, TrajectorySequence } from './trajectory.js';

beforeAll(async () => {
  await setBackend('cpu');
});

/** A sequence from a string: P = prompt, A = action, E = env token; reward r on '!' (an action). */
function seq(pattern: string, reward = 1): TrajectorySequence {
  const chars = [...pattern];
  return {
    tokenIds: chars.map((c, i) => c.charCodeAt(0) * 10 + i),
    actionMask: chars.map((c) => (c === 'A' || c === '!' ? 1 : 0)),
    logprobs: chars.map((c) => (c === 'A' || c === '!' ? -0.5 : 0)),
    rewards: chars.map((c) => (c === '!' ? reward : 0)),
  };
}
function traj(promptId: number, sampleId: number, sequences: TrajectorySequence[]): Trajectory {
  const reward = sequences.reduce((s, q) => s + q.rewards.reduce((a, b) => a + b, 0), 0);
  return { promptId, sampleId, prompt: '', answer: null, sequences, turns: [], reward };
}

describe('toTrainingBatch / padTrainingBatch', () => {
  // group 0: rewards 1 and 0 (second trajectory is multi-sequence: a split); group 1: 3 and 1
  const groups = [
    [traj(5, 0, [seq('PPA!')]), traj(5, 1, [seq('PPA!', 0), seq('PPEA!', 0)])],
    [traj(9, 0, [seq('PA!', 3)]), traj(9, 1, [seq('PPAEEA!', 1)])],
  ];
  const batch = toTrainingBatch(groups, 2);

  it('applies the RL2 shift and numbers trajectories per group consecutively', () => {
    expect(batch.trajectories).toBe(4);
    expect(batch.trajectoryIds).toEqual([0, 1, 1, 2, 3]);
    const s = batch.sequences[4];
    const src = groups[1][1].sequences[0];
    expect(s.states).toEqual(src.tokenIds.slice(0, -1));
    expect(s.actions).toEqual(src.tokenIds.slice(1));
    expect(s.actionMask).toEqual([0, 1, 0, 0, 1, 1]);
    expect(s.rewards).toEqual([0, 0, 0, 0, 0, 1]);
    expect(s.llmLogps).toEqual([0, -0.5, 0, 0, -0.5, -0.5]);
    expect(s.eosMask).toEqual([0, 0, 0, 0, 0, 1]);
    expect(s.positionIds).toEqual([0, 1, 2, 3, 4, 5]);
    expect(batch.sequences.map((q) => q.promptId)).toEqual([0, 0, 0, 1, 1]);
    expect(() => toTrainingBatch([groups[0].slice(1)], 2)).toThrow(
      /group 0 has 1 trajectories, expected responsesPerPrompt = 2/,
    );
  });

  it('pads to [B, T] rows that @rl2/algos reads: GRPO advantages = R - group mean on action tokens', () => {
    const p = padTrainingBatch(batch, 0);
    expect(p.states.map((r) => r.length)).toEqual([6, 6, 6, 6, 6]);
    expect(p.actionMask[2]).toEqual([0, 0, 1, 1, 0, 0]);
    const adv = computeReinforceAdvantages(
      {
        rewards: tensor2d(p.rewards),
        actionMask: tensor2d(p.actionMask),
        trajectoryIds: tensor1d(p.trajectoryIds, 'int32'),
      },
      { responsesPerPrompt: 2 },
    ).arraySync() as number[][];
    // R = [1, 0, 3, 1]; group means 0.5 and 2 -> A = [0.5, -0.5, 1, -1]
    const expected = [0.5, -0.5, -0.5, 1, -1];
    adv.forEach((row, i) => {
      row.forEach((a, t) => {
        expect(a).toBeCloseTo(p.actionMask[i][t] === 1 ? expected[i] : 0, 6);
      });
    });
  });

  it('GAE joins the turns of a trajectory across its sequences (gamma = lambda = 1, V = 0: A = return to go)', () => {
    const p = padTrainingBatch(batch, 0);
    const zeros = p.rewards.map((r) => r.map(() => 0));
    const { returns } = computeGae(
      {
        rewards: tensor2d(p.rewards),
        actionMask: tensor2d(p.actionMask),
        trajectoryIds: tensor1d(p.trajectoryIds, 'int32'),
        values: tensor2d(zeros),
      },
      { whiten: false },
    );
    const r = returns.arraySync() as number[][];
    // trajectory 3: actions at positions 1, 4, 5 with a reward 1 on the last -> return 1 on each
    expect([r[4][1], r[4][4], r[4][5]]).toEqual([1, 1, 1]);
    // trajectory 0: reward 1 on its last action -> both actions return 1
    expect([r[0][1], r[0][2]]).toEqual([1, 1]);
  });
});
