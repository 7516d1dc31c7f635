import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  disposeAll,
  expectClose,
  expectNoLeak,
  metricValues,
  fixture,
  take,
  tensorsOf,
  useCpu,
} from '../test/helpers.js';
import type { LossAggregation } from './aggregate-loss.js';
import { criticValueLoss } from './critic-value-loss.js';

type Layouts = Record<'padded' | 'packed', Record<string, number[][]>>;
interface Fx {
  inputs: Layouts;
  cases: {
    clip: number;
    mode: LossAggregation;
    loss: number;
    metrics: Record<string, number>;
    grad: Layouts;
  }[];
}
const fx = fixture<Fx>('critic.json');

beforeAll(useCpu);

describe('criticValueLoss', () => {
  for (const layoutName of ['padded', 'packed'] as const) {
    it(`matches torch: loss, clip fraction, gradient (${layoutName})`, () => {
      const t = tensorsOf(fx.inputs[layoutName]);
      const inputs = (values: tf.Tensor) => ({
        values,
        oldValues: t.oldValues!,
        returns: t.returns!,
        actionMask: t.actionMask!,
        sequenceIds: t.sequenceIds,
      });
      expectNoLeak(() => {
        for (const c of fx.cases) {
          const options = { clip: c.clip, aggregation: { mode: c.mode } };
          const r = criticValueLoss(inputs(t.values!), options);
          const { loss } = r;
          const metrics = metricValues(r.metrics);
          expectClose(take(loss), c.loss, 1e-6, 'loss');
          expectClose(metrics.clipFraction!, c.metrics.clipFraction, 1e-6, 'clipFraction');
          expectClose(metrics.valueError!, c.metrics.valueError, 1e-6, 'valueError');
          const g = tf.grad((v: tf.Tensor) => criticValueLoss(inputs(v), options).loss)(t.values!);
          expectClose(take(g), c.grad[layoutName].values, 1e-6, 'grad');
        }
      });
      disposeAll(t);
    });
  }

  it('hand-derived: no 1/2 factor, clipped branch wins when it is larger', () => {
    const values = tf.tensor([[2, 0]]);
    const oldValues = tf.tensor([[0, 0]]);
    const returns = tf.tensor([[0, 1]]);
    const actionMask = tf.ones([1, 2]);
    // token 0: mse 4, clipped V = 0.5 -> 0.25, max 4; token 1: mse 1, clipped 1 -> mean 2.5
    const r = criticValueLoss({ values, oldValues, returns, actionMask });
    expectClose(take(r.loss), 2.5);
    expect(metricValues(r.metrics).clipFraction).toBe(0);
    tf.dispose([values, oldValues, returns, actionMask]);
  });
});
