import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  disposeAll,
  expectClose,
  expectNoLeak,
  fixture,
  take,
  tensorsOf,
  useCpu,
} from '../test/helpers.js';
import {
  type LossAggregation,
  aggregateLoss,
  aggregationWeights,
  countTotals,
} from './aggregate-loss.js';
import { AlgosError } from './errors.js';

interface Fx {
  localTotals: { actionTokens: number; sequences: number };
  layouts: Record<'padded' | 'packed', Record<string, number[][]>>;
  cases: {
    mode: LossAggregation;
    totals: { actionTokens: number; sequences: number } | null;
    normLength: number;
    expected: number;
  }[];
}
const fx = fixture<Fx>('aggregation.json');

beforeAll(useCpu);

describe('aggregateLoss', () => {
  for (const layoutName of ['padded', 'packed'] as const) {
    it(`matches the torch reference in every mode (${layoutName} layout)`, () => {
      const t = tensorsOf(fx.layouts[layoutName]);
      const layout = { actionMask: t.actionMask!, sequenceIds: t.sequenceIds };
      expect(countTotals(layout)).toEqual(fx.localTotals);
      for (const c of fx.cases) {
        const options = { mode: c.mode, totals: c.totals ?? undefined, normLength: c.normLength };
        expectClose(
          take(aggregateLoss(t.values!, layout, options)),
          c.expected,
          1e-6,
          `${c.mode} ${JSON.stringify(c.totals)}`,
        );
      }
      disposeAll(t);
    });
  }

  it('sums to the global mean over any split into micro-batches (rank layout)', () => {
    // sequences of the packed layout split in three micro-batches, each given the global totals
    const t = tensorsOf(fx.layouts.padded);
    const rows = t.values!.shape[0]!;
    for (const c of fx.cases.filter((x) => x.totals === null)) {
      let total = 0;
      for (const [start, size] of [
        [0, 2],
        [2, 1],
        [3, rows - 3],
      ] as const) {
        const values = tf.slice(t.values!, [start, 0], [size, -1]);
        const actionMask = tf.slice(t.actionMask!, [start, 0], [size, -1]);
        total += take(
          aggregateLoss(
            values,
            { actionMask },
            { mode: c.mode, totals: fx.localTotals, normLength: c.normLength },
          ),
        )[0]!;
        tf.dispose([values, actionMask]);
      }
      expectClose(total, c.expected, 1e-6, c.mode);
    }
    disposeAll(t);
  });

  it('aggregationWeights: token weights sum to 1, each sequence to 1/S in seq-mean-token-mean', () => {
    const t = tensorsOf(fx.layouts.packed);
    const layout = { actionMask: t.actionMask!, sequenceIds: t.sequenceIds };
    expectClose(take(tf.tidy(() => tf.sum(aggregationWeights(layout)))), 1, 1e-6, 'token-mean');
    const w = aggregationWeights(layout, { mode: 'seq-mean-token-mean' });
    const ids = t.sequenceIds!.dataSync();
    const wd = take(w);
    const perSeq = new Map<number, number>();
    ids.forEach((id, i) => {
      perSeq.set(id, (perSeq.get(id) ?? 0) + wd[i]!);
    });
    perSeq.delete(-1);
    const s = fx.localTotals.sequences;
    expectClose(
      [...perSeq.values()].filter((x) => x > 0),
      Array(s).fill(1 / s),
      1e-6,
      'per sequence',
    );
    disposeAll(t);
  });

  it('gives 0, not NaN, for an all-zero mask and zero totals', () => {
    const values = tf.tensor([[1, 2, 3]]);
    const actionMask = tf.zeros([1, 3]);
    for (const mode of [
      'token-mean',
      'seq-mean-token-sum',
      'seq-mean-token-mean',
      'seq-mean-token-sum-norm',
    ] as const) {
      expect(take(aggregateLoss(values, { actionMask }, { mode }))[0]).toBe(0);
      expect(
        take(
          aggregateLoss(
            values,
            { actionMask },
            { mode, totals: { actionTokens: 0, sequences: 0 } },
          ),
        )[0],
      ).toBe(0);
    }
    tf.dispose([values, actionMask]);
  });

  it('has a gradient of mask / N in token-mean mode', () => {
    const values = tf.tensor([[1, 2, 3, 4]]);
    const actionMask = tf.tensor([[0, 1, 1, 0]]);
    const g = tf.grad((v: tf.Tensor) =>
      aggregateLoss(v, { actionMask }, { totals: { actionTokens: 8, sequences: 1 } }),
    )(values);
    expectClose(take(g), [[0, 1 / 8, 1 / 8, 0]]);
    tf.dispose([values, actionMask]);
  });

  it('leaks no tensors and names bad inputs', () => {
    const t = tensorsOf(fx.layouts.packed);
    const layout = { actionMask: t.actionMask!, sequenceIds: t.sequenceIds };
    expectNoLeak(() => {
      for (const c of fx.cases) aggregateLoss(t.values!, layout, { mode: c.mode }).dispose();
    });
    expect(() => aggregateLoss(t.values!, layout, { mode: 'mean' as LossAggregation })).toThrow(
      /valid modes: token-mean/,
    );
    const wrong = tf.zeros([1, 2]);
    expect(() => aggregateLoss(wrong, layout)).toThrow(AlgosError);
    expect(() =>
      aggregateLoss(t.values!, layout, { mode: 'seq-mean-token-sum-norm', normLength: 0 }),
    ).toThrow(/normLength/);
    wrong.dispose();
    disposeAll(t);
  });
});
