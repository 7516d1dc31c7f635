import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectClose, expectNoLeak, fixture, metricValues, take, useCpu } from '../test/helpers.js';
import { bradleyTerryLoss } from './bradley-terry-loss.js';
import { type DpoInputs, type DpoOptions, dpoLoss } from './dpo-loss.js';
import { sequenceSums, splitPairs } from './sequence-sums.js';

interface Fx {
  bradleyTerry: {
    chosen: number[];
    rejected: number[];
    totalPairs: number;
    loss: number;
    metrics: Record<string, number>;
    gradChosen: number[];
    gradRejected: number[];
  };
  dpo: {
    inputs: Record<string, number[]>;
    cases: {
      name: string;
      options: DpoOptions;
      loss: number;
      metrics: Record<string, number>;
      gradChosen: number[];
      gradRejected: number[];
    }[];
  };
}
const fx = fixture<Fx>('preference.json');

beforeAll(useCpu);

describe('bradleyTerryLoss', () => {
  it('matches torch: loss over global pairs, accuracy (ties are wrong), gradients', () => {
    const bt = fx.bradleyTerry;
    const chosen = tf.tensor1d(bt.chosen);
    const rejected = tf.tensor1d(bt.rejected);
    expectNoLeak(() => {
      const r = bradleyTerryLoss({ chosen, rejected }, { totalPairs: bt.totalPairs });
      expectClose(take(r.loss), bt.loss, 1e-6, 'loss');
      const btm = metricValues(r.metrics);
      for (const [k, v] of Object.entries(bt.metrics)) expectClose(btm[k]!, v, 1e-6, k);
      const [gc, gr] = tf.grads(
        (c: tf.Tensor, j: tf.Tensor) =>
          bradleyTerryLoss({ chosen: c, rejected: j }, { totalPairs: bt.totalPairs }).loss,
      )([chosen, rejected]);
      expectClose(take(gc!), bt.gradChosen, 1e-6, 'grad chosen');
      expectClose(take(gr!), bt.gradRejected, 1e-6, 'grad rejected');
    });
    tf.dispose([chosen, rejected]);
  });

  it('reads RM scores at the last token of packed pairs', () => {
    // one packed row: chosen_0 (3 tokens), rejected_0 (2 tokens), padding
    const values = tf.tensor([[0.1, 0.2, 1.5, 0.3, -0.5, 9]]);
    const eos = tf.tensor([[0, 0, 1, 0, 1, 0]]);
    const sequenceIds = tf.tensor([[0, 0, 0, 1, 1, -1]], undefined, 'int32');
    const sums = sequenceSums(values, { actionMask: eos, sequenceIds });
    const { chosen, rejected } = splitPairs(sums);
    expectClose(take(chosen), [1.5]);
    expectClose(take(rejected), [-0.5]);
    tf.dispose([values, eos, sequenceIds, sums]);
  });
});

describe('dpoLoss', () => {
  const make = (): DpoInputs =>
    Object.fromEntries(
      Object.entries(fx.dpo.inputs).map(([k, v]) => [k, tf.tensor1d(v)]),
    ) as unknown as DpoInputs;

  for (const c of fx.dpo.cases) {
    it(`${c.name} matches torch: loss, rewards, margin, accuracy, gradients`, () => {
      const inputs = make();
      expectNoLeak(() => {
        const r = dpoLoss(inputs, c.options);
        expectClose(take(r.loss), c.loss, 1e-6, 'loss');
        const m = metricValues(r.metrics);
        expect(Object.keys(m).sort()).toEqual(Object.keys(c.metrics).sort());
        for (const [k, v] of Object.entries(c.metrics)) expectClose(m[k]!, v, 1e-6, k);
        const f = (cl: tf.Tensor, rl: tf.Tensor) =>
          dpoLoss({ ...inputs, chosenLogps: cl, rejectedLogps: rl }, c.options).loss;
        const [gc, gr] = tf.grads(f)([inputs.chosenLogps, inputs.rejectedLogps]);
        expectClose(take(gc!), c.gradChosen, 1e-6, 'grad chosen');
        expectClose(take(gr!), c.gradRejected, 1e-6, 'grad rejected');
      });
      tf.dispose(Object.values(inputs) as tf.Tensor[]);
    });
  }

  it('gradient agrees with central finite differences (float64 reference-free check)', () => {
    const inputs = make();
    const opts: DpoOptions = { labelSmoothing: 0.1, nllCoef: 0.3 };
    const base = Array.from(inputs.chosenLogps.dataSync());
    const at = (xs: number[]) => {
      const cl = tf.tensor1d(xs);
      const v = take(dpoLoss({ ...inputs, chosenLogps: cl }, opts).loss)[0]!;
      cl.dispose();
      return v;
    };
    const [g] = tf.grads((cl: tf.Tensor) => dpoLoss({ ...inputs, chosenLogps: cl }, opts).loss)([
      inputs.chosenLogps,
    ]);
    const analytic = take(g!);
    const h = 1e-2; // float32: a wide step; the loss is smooth so the O(h^2) error is ~1e-5
    base.forEach((x, i) => {
      const up = [...base];
      const down = [...base];
      up[i] = x + h;
      down[i] = x - h;
      expectClose((at(up) - at(down)) / (2 * h), analytic[i]!, 2e-4, `fd[${i}]`);
    });
    tf.dispose(Object.values(inputs) as tf.Tensor[]);
  });

  it('names missing inputs and bad options', () => {
    const inputs = make();
    const { refChosenLogps: _r, ...noRef } = inputs;
    expect(() => dpoLoss(noRef)).toThrow(/variant dpo needs inputs.refChosenLogps/);
    const { chosenLengths: _l, ...noLen } = inputs;
    expect(() => dpoLoss(noLen, { variant: 'simpo' })).toThrow(/simpo needs inputs.chosenLengths/);
    expect(() => dpoLoss(inputs, { labelSmoothing: 0.7 })).toThrow(/labelSmoothing = 0.7/);
    expect(() => dpoLoss(inputs, { variant: 'kto' as 'dpo' })).toThrow(
      /valid variants: dpo, ipo, simpo/,
    );
    const short = tf.tensor1d([1]);
    expect(() => dpoLoss({ ...inputs, rejectedLogps: short })).toThrow(
      /rejectedLogps has shape \[1\]/,
    );
    tf.dispose([...(Object.values(inputs) as tf.Tensor[]), short]);
  });

  it('an empty batch gives 0, not NaN', () => {
    const e = tf.tensor1d([]);
    const r = dpoLoss({ chosenLogps: e, rejectedLogps: e, refChosenLogps: e, refRejectedLogps: e });
    expect(take(r.loss)[0]).toBe(0);
    expect(Object.values(metricValues(r.metrics)).every((v) => v === 0)).toBe(true);
    e.dispose();
  });
});
