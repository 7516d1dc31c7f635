import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectClose, expectNoLeak, fixture, take, useCpu } from '../test/helpers.js';
import {
  type KlEstimator,
  approxKl,
  klLossTerm,
  klPenalizedAdvantages,
  klPenalizedRewards,
} from './kl-estimator.js';

interface Fx {
  logps: number[][];
  refLogps: number[][];
  actionMask: number[][];
  rewards: number[][];
  advantages: number[][];
  coef: number;
  estimators: Record<
    KlEstimator,
    {
      kl: number[][];
      gradMaskedSum: number[][];
      rewards: number[][];
      advantages: number[][];
      lossTerm: number[][];
    }
  >;
}
const fx = fixture<Fx>('kl.json');

beforeAll(useCpu);

describe('KL estimators and placements', () => {
  const t = () => ({
    logps: tf.tensor(fx.logps),
    ref: tf.tensor(fx.refLogps),
    mask: tf.tensor(fx.actionMask),
    rewards: tf.tensor(fx.rewards),
    adv: tf.tensor(fx.advantages),
  });

  for (const est of ['k1', 'k2', 'k3'] as const) {
    it(`${est}: values, gradient and the three placements match torch`, () => {
      const { logps, ref, mask, rewards, adv } = t();
      const e = fx.estimators[est];
      expectNoLeak(() => {
        const kl = approxKl(logps, ref, est);
        expectClose(kl.dataSync(), e.kl, 1e-6, 'kl');
        expectClose(
          take(klPenalizedRewards(rewards, kl, mask, fx.coef)),
          e.rewards,
          1e-6,
          'rewards',
        );
        expectClose(
          take(klPenalizedAdvantages(adv, kl, mask, fx.coef)),
          e.advantages,
          1e-6,
          'advantages',
        );
        expectClose(take(klLossTerm(logps, ref, fx.coef, est)), e.lossTerm, 1e-6, 'loss term');
        kl.dispose();
        const g = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(approxKl(x, ref, est), mask)))(logps);
        expectClose(take(g), e.gradMaskedSum, 1e-6, 'grad');
      });
      tf.dispose([logps, ref, mask, rewards, adv]);
    });
  }

  it('k3 is never negative and all are zero when the policies agree', () => {
    const x = tf.tensor([[-1, -2, -0.5]]);
    for (const est of ['k1', 'k2', 'k3'] as const)
      expect(Array.from(take(approxKl(x, x, est)))).toEqual([0, 0, 0]);
    x.dispose();
  });

  it('rejects an unknown estimator and mismatched shapes with a fix', () => {
    const a = tf.zeros([1, 2]);
    const b = tf.zeros([1, 3]);
    expect(() => approxKl(a, a, 'k4' as KlEstimator)).toThrow(/valid estimators: k1, k2, k3/);
    expect(() => approxKl(a, b)).toThrow(/refLogps has shape \[1, 3\]/);
    tf.dispose([a, b]);
  });
});
