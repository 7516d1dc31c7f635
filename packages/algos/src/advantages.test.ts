import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectClose, expectNoLeak, fixture, take, useCpu } from '../test/helpers.js';
import { computeGae } from './gae.js';
import { computeReinforcePlusPlusAdvantages } from './reinforce-plus-plus.js';
import { computeReinforceAdvantages } from './reinforce.js';
import { computeRlooAdvantages } from './rloo.js';
import { whitenAdvantages } from './whiten-advantages.js';

interface Fx {
  batch: {
    rewards: number[][];
    values: number[][];
    actionMask: number[][];
    trajectoryIds: number[];
  };
  cases: {
    gae: {
      gamma: number;
      lambda: number;
      whiten: boolean;
      advantages: number[][];
      returns: number[][];
    }[];
    reinforce: {
      responsesPerPrompt: number;
      globalBaseline: boolean;
      normVar: boolean;
      advantages: number[][];
    }[];
    rloo: { responsesPerPrompt: number; advantages: number[][] }[];
    reinforcePlusPlus: {
      gamma: number;
      baseline: 'none' | 'group-mean';
      responsesPerPrompt: number;
      whiten: boolean;
      advantages: number[][];
    }[];
  };
}
const fx = fixture<Fx>('advantages.json');

beforeAll(useCpu);

function batch() {
  return {
    rewards: tf.tensor(fx.batch.rewards),
    values: tf.tensor(fx.batch.values),
    actionMask: tf.tensor(fx.batch.actionMask),
    trajectoryIds: tf.tensor1d(fx.batch.trajectoryIds, 'int32'),
  };
}

/** The same batch with per-token trajectory ids (-1 off action tokens is allowed too). */
function perTokenIds(b: ReturnType<typeof batch>) {
  const [rows, cols] = b.rewards.shape as [number, number];
  const ids = fx.batch.trajectoryIds.map((id, r) =>
    Array.from({ length: cols }, (_, c) => (fx.batch.actionMask[r]![c] ? id : -1)),
  );
  expect(ids.length).toBe(rows);
  return { ...b, trajectoryIds: tf.tensor(ids, undefined, 'int32') };
}

describe('advantage estimators match the torch reference (multi-turn trajectories)', () => {
  it('GAE on the action-only timeline, returns, whitening', () => {
    const b = batch();
    const bt = perTokenIds(b);
    expectNoLeak(() => {
      for (const c of fx.cases.gae) {
        for (const input of [b, bt]) {
          const { advantages, returns } = computeGae(input, c);
          expectClose(
            take(advantages),
            c.advantages,
            1e-6,
            `gae ${c.gamma}/${c.lambda} advantages`,
          );
          expectClose(take(returns), c.returns, 1e-6, `gae ${c.gamma}/${c.lambda} returns`);
        }
      }
    });
    bt.trajectoryIds.dispose();
    tf.dispose(Object.values(b));
  });

  it('gives the same answer with every trajectory packed into one row (per-token ids)', () => {
    const b = perTokenIds(batch());
    const flat = (x: tf.Tensor) => tf.reshape(x, [1, -1]);
    const packed = {
      rewards: flat(b.rewards),
      values: flat(b.values),
      actionMask: flat(b.actionMask),
      trajectoryIds: flat(b.trajectoryIds),
    };
    const c = fx.cases.gae[1]!;
    const { advantages, returns } = computeGae(packed, c);
    expectClose(take(advantages), c.advantages, 1e-6, 'packed gae');
    expectClose(take(returns), c.returns, 1e-6, 'packed returns');
    const r = fx.cases.reinforce[1]!;
    expectClose(take(computeReinforceAdvantages(packed, r)), r.advantages, 1e-6, 'packed grpo');
    tf.dispose([...Object.values(b), ...Object.values(packed)]);
  });

  it('REINFORCE / GRPO / Dr. GRPO baselines', () => {
    const b = batch();
    expectNoLeak(() => {
      for (const c of fx.cases.reinforce) {
        expectClose(
          take(computeReinforceAdvantages(b, c)),
          c.advantages,
          1e-6,
          JSON.stringify(c).slice(0, 80),
        );
      }
    });
    tf.dispose(Object.values(b));
  });

  it('RLOO', () => {
    const b = batch();
    for (const c of fx.cases.rloo) {
      expectClose(
        take(computeRlooAdvantages(b, c)),
        c.advantages,
        1e-6,
        `rloo G=${c.responsesPerPrompt}`,
      );
    }
    tf.dispose(Object.values(b));
  });

  it('REINFORCE++ and REINFORCE++-baseline', () => {
    const b = batch();
    for (const c of fx.cases.reinforcePlusPlus) {
      expectClose(
        take(computeReinforcePlusPlusAdvantages(b, c)),
        c.advantages,
        1e-6,
        `r++ ${c.baseline} ${c.gamma}`,
      );
    }
    tf.dispose(Object.values(b));
  });
});

describe('advantage edge cases', () => {
  it('a group with equal rewards gets exactly 0 (with and without std division)', () => {
    const rewards = tf.tensor([
      [0, 1],
      [0, 1],
      [0, 2],
      [0, 0],
    ]);
    const actionMask = tf.tensor([
      [0, 1],
      [0, 1],
      [0, 1],
      [0, 1],
    ]);
    for (const normVar of [false, true]) {
      const a = take(
        computeReinforceAdvantages({ rewards, actionMask }, { responsesPerPrompt: 2, normVar }),
      );
      expect(Array.from(a.slice(0, 4))).toEqual([0, 0, 0, 0]);
      expect(a[5]! > 0 && a[7]! < 0).toBe(true);
    }
    expect(
      Array.from(
        take(computeRlooAdvantages({ rewards, actionMask }, { responsesPerPrompt: 2 })).slice(0, 4),
      ),
    ).toEqual([0, 0, 0, 0]);
    tf.dispose([rewards, actionMask]);
  });

  it('one response per prompt uses the batch baseline; a single trajectory gives no NaN', () => {
    const rewards = tf.tensor([[0, 0, 3]]);
    const actionMask = tf.tensor([[0, 1, 1]]);
    const values = tf.tensor([[0, 0.5, 0.25]]);
    expect(
      Array.from(take(computeReinforceAdvantages({ rewards, actionMask }, { normVar: true }))),
    ).toEqual([0, 0, 0]);
    const gae = computeGae({ rewards, actionMask, values });
    take(gae.returns);
    for (const a of [gae.advantages, computeReinforcePlusPlusAdvantages({ rewards, actionMask })]) {
      const x = Array.from(take(a));
      expect(x.every(Number.isFinite)).toBe(true);
      expectClose(x[1]! + x[2]!, 0); // whitened over the two action tokens
    }
    // RLOO with a group of one: baseline 0, A = R
    expect(Array.from(take(computeRlooAdvantages({ rewards, actionMask })))).toEqual([0, 3, 3]);
    tf.dispose([rewards, actionMask, values]);
  });

  it('an empty action mask gives zeros, never NaN', () => {
    const rewards = tf.tensor([[1, 2]]);
    const actionMask = tf.zeros([1, 2]);
    const values = tf.tensor([[1, 1]]);
    for (const a of [
      (() => {
        const g = computeGae({ rewards, actionMask, values });
        g.returns.dispose();
        return g.advantages;
      })(),
      computeReinforceAdvantages({ rewards, actionMask }, { normVar: true }),
      computeRlooAdvantages({ rewards, actionMask }),
      computeReinforcePlusPlusAdvantages({ rewards, actionMask }),
      whitenAdvantages(rewards, actionMask),
    ]) {
      expect(Array.from(take(a))).toEqual([0, 0]);
    }
    tf.dispose([rewards, actionMask, values]);
  });

  it('single-token trajectories: GAE without whitening is r - V', () => {
    const rewards = tf.tensor([[2], [-1]]);
    const actionMask = tf.ones([2, 1]);
    const values = tf.tensor([[0.5], [0.25]]);
    const { advantages, returns } = computeGae(
      { rewards, actionMask, values },
      { whiten: false, gamma: 0.9, lambda: 0.8 },
    );
    expectClose(take(advantages), [[1.5], [-1.25]]);
    expectClose(take(returns), [[2], [-1]]);
    tf.dispose([rewards, actionMask, values]);
  });

  it('names what to fix on bad grouping and bad ids', () => {
    const rewards = tf.zeros([3, 2]);
    const actionMask = tf.ones([3, 2]);
    expect(() =>
      computeReinforceAdvantages({ rewards, actionMask }, { responsesPerPrompt: 2 }),
    ).toThrow(/3 trajectories do not split into groups of responsesPerPrompt = 2/);
    const ids = tf.tensor(
      [
        [0, 0],
        [1, -1],
        [2, 2],
      ],
      undefined,
      'int32',
    );
    expect(() => computeReinforceAdvantages({ rewards, actionMask, trajectoryIds: ids })).toThrow(
      /row 1, position 1/,
    );
    const badIds = tf.tensor1d([0, 1], 'int32');
    expect(() => computeRlooAdvantages({ rewards, actionMask, trajectoryIds: badIds })).toThrow(
      /must be \[3, 2\]/,
    );
    expect(() => computeGae({ rewards, actionMask, values: rewards }, { gamma: 1.5 })).toThrow(
      /gamma = 1.5/,
    );
    tf.dispose([rewards, actionMask, ids, badIds]);
  });
});
