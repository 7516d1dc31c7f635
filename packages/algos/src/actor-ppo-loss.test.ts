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
import { type ActorPpoInputs, type ActorPpoOptions, actorPpoLoss } from './actor-ppo-loss.js';
import type { LossAggregation } from './aggregate-loss.js';
import { countTotals } from './aggregate-loss.js';
import type { KlEstimator } from './kl-estimator.js';

type Layouts = Record<'padded' | 'packed', Record<string, number[][]>>;
interface Case {
  name: string;
  options: {
    clip?: number;
    clipLow?: number;
    clipHigh?: number;
    dualClip?: number;
    klCoef?: number;
    klEstimator?: KlEstimator;
    tisCoef?: number;
    entropyCoef?: number;
    useOld?: boolean;
    ratioLevel?: 'token' | 'sequence';
  };
  mode: LossAggregation;
  totals: { actionTokens: number; sequences: number } | null;
  normLength: number;
  loss: number;
  metrics: Record<string, number>;
  inputs: Layouts;
  grad: Layouts;
}
const fx = fixture<{ cases: Case[] }>('actor.json');

beforeAll(useCpu);

function setup(c: Case, layoutName: 'padded' | 'packed') {
  const t = tensorsOf(c.inputs[layoutName]);
  const o = c.options;
  const options: ActorPpoOptions = {
    clip: o.clip,
    clipLow: o.clipLow,
    clipHigh: o.clipHigh,
    dualClip: o.dualClip,
    ratioLevel: o.ratioLevel,
    tisCoef: o.tisCoef,
    entropyCoef: o.entropyCoef,
    kl: o.klCoef ? { coef: o.klCoef, estimator: o.klEstimator } : undefined,
    aggregation: { mode: c.mode, totals: c.totals ?? undefined, normLength: c.normLength },
  };
  const inputs = (logps: tf.Tensor): ActorPpoInputs => ({
    logps,
    oldLogps: o.useOld === false ? undefined : t.oldLogps,
    advantages: t.advantages!,
    engineLogps: t.engineLogps,
    refLogps: t.refLogps,
    entropy: t.entropy,
    actionMask: t.actionMask!,
    sequenceIds: t.sequenceIds,
  });
  return { t, options, inputs };
}

describe('actorPpoLoss matches torch (loss, metrics, autograd gradient)', () => {
  for (const c of fx.cases) {
    it(c.name, () => {
      for (const layoutName of ['padded', 'packed'] as const) {
        const { t, options, inputs } = setup(c, layoutName);
        expectNoLeak(() => {
          const r = actorPpoLoss(inputs(t.logps!), options);
          const { loss } = r;
          const metrics = metricValues(r.metrics);
          expectClose(take(loss), c.loss, 1e-6, `${layoutName} loss`);
          expect(Object.keys(metrics).sort()).toEqual(Object.keys(c.metrics).sort());
          for (const [k, v] of Object.entries(c.metrics)) expectClose(metrics[k]!, v, 1e-6, k);
          const g = tf.grad((x: tf.Tensor) => actorPpoLoss(inputs(x), options).loss)(t.logps!);
          expectClose(take(g), c.grad[layoutName].logps, 1e-6, `${layoutName} grad`);
        });
        disposeAll(t);
      }
    });
  }
});

describe('actorPpoLoss behaviour', () => {
  it('micro-batch losses with global totals add up to the full-batch loss', () => {
    const c = fx.cases.find((x) => x.name === 'ppo')!;
    const { t, options, inputs } = setup(c, 'padded');
    const totals = countTotals({ actionMask: t.actionMask! });
    const rows = t.logps!.shape[0]!;
    let sum = 0;
    for (const [start, size] of [
      [0, 1],
      [1, 3],
      [4, rows - 4],
    ] as const) {
      const part = (x: tf.Tensor | undefined) =>
        x === undefined ? undefined : tf.slice(x, [start, 0], [size, -1]);
      const full = inputs(t.logps!);
      const sliced = Object.fromEntries(
        Object.entries(full).map(([k, v]) => [k, part(v as tf.Tensor)]),
      ) as unknown as ActorPpoInputs;
      const r = actorPpoLoss(sliced, { ...options, aggregation: { totals } });
      sum += take(r.loss)[0]!;
      tf.dispose(Object.values(sliced) as tf.Tensor[]);
    }
    expectClose(sum, c.loss, 1e-6, 'sum of micro-batch losses');
    disposeAll(t);
  });

  it('an all-masked batch gives loss 0 and finite metrics and gradients', () => {
    const logps = tf.tensor([[-1, -2]]);
    const z = tf.zeros([1, 2]);
    const adv = tf.tensor([[1, -1]]);
    for (const ratioLevel of ['token', 'sequence'] as const) {
      const opts: ActorPpoOptions = { ratioLevel, aggregation: { mode: 'seq-mean-token-mean' } };
      const r = actorPpoLoss({ logps, advantages: adv, actionMask: z, oldLogps: z }, opts);
      expect(take(r.loss)[0]).toBe(0);
      expect(Object.values(metricValues(r.metrics)).every(Number.isFinite)).toBe(true);
      const g = tf.grad(
        (x: tf.Tensor) =>
          actorPpoLoss({ logps: x, advantages: adv, actionMask: z, oldLogps: z }, opts).loss,
      )(logps);
      expect(Array.from(take(g))).toEqual([0, 0]);
    }
    tf.dispose([logps, z, adv]);
  });

  it('without oldLogps the ratio is 1 and the gradient is -A / N (REINFORCE)', () => {
    const logps = tf.tensor([[-1, -2, -3]]);
    const advantages = tf.tensor([[0.5, -2, 4]]);
    const actionMask = tf.tensor([[1, 1, 0]]);
    const g = tf.grad((x: tf.Tensor) => actorPpoLoss({ logps: x, advantages, actionMask }).loss)(
      logps,
    );
    expectClose(take(g), [[-0.25, 1, 0]]);
    tf.dispose([logps, advantages, actionMask]);
  });

  it('names the missing input or the bad option', () => {
    const x = tf.zeros([1, 2]);
    const m = tf.ones([1, 2]);
    const base = { logps: x, advantages: x, actionMask: m };
    expect(() => actorPpoLoss(base, { tisCoef: 2 })).toThrow(
      /tisCoef = 2 needs inputs.engineLogps/,
    );
    expect(() => actorPpoLoss(base, { kl: { coef: 0.1 } })).toThrow(/needs inputs.refLogps/);
    expect(() => actorPpoLoss(base, { entropyCoef: 0.1 })).toThrow(/needs inputs.entropy/);
    expect(() => actorPpoLoss(base, { dualClip: 0.5 })).toThrow(/dualClip = 0.5/);
    expect(() => actorPpoLoss(base, { clipLow: 1 })).toThrow(/clipLow = 1/);
    const y = tf.zeros([2, 2]);
    expect(() => actorPpoLoss({ ...base, advantages: y })).toThrow(/advantages has shape \[2, 2\]/);
    tf.dispose([x, m, y]);
  });
});
