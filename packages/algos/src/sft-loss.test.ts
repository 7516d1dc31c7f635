import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  disposeAll,
  expectClose,
  expectNoLeak,
  fixture,
  metricValues,
  take,
  tensorsOf,
  useCpu,
} from '../test/helpers.js';
import type { LossAggregation } from './aggregate-loss.js';
import { sftLoss } from './sft-loss.js';

type Layouts = Record<'padded' | 'packed', Record<string, number[][]>>;
const fx = fixture<{
  inputs: Layouts;
  cases: { mode: LossAggregation; loss: number; grad: Layouts }[];
}>('sft.json');

beforeAll(useCpu);

describe('sftLoss', () => {
  for (const layoutName of ['padded', 'packed'] as const) {
    it(`matches torch in token and sequence modes (${layoutName})`, () => {
      const t = tensorsOf(fx.inputs[layoutName]);
      const layout = { actionMask: t.actionMask!, sequenceIds: t.sequenceIds };
      expectNoLeak(() => {
        for (const c of fx.cases) {
          const options = { aggregation: { mode: c.mode } };
          const r = sftLoss({ ...layout, logps: t.logps! }, options);
          expectClose(take(r.loss), c.loss, 1e-6, c.mode);
          expectClose(metricValues(r.metrics).nll!, c.loss, 1e-6, 'nll');
          const g = tf.grad((x: tf.Tensor) => sftLoss({ ...layout, logps: x }, options).loss)(
            t.logps!,
          );
          expectClose(take(g), c.grad[layoutName].logps, 1e-6, 'grad');
        }
      });
      disposeAll(t);
    });
  }

  it('is 0 with an empty mask', () => {
    const logps = tf.tensor([[-1, -2]]);
    const actionMask = tf.zeros([1, 2]);
    expect(take(sftLoss({ logps, actionMask }).loss)[0]).toBe(0);
    tf.dispose([logps, actionMask]);
  });
});
