import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectClose, take, useCpu } from '../test/helpers.js';
import { AlgosError } from './errors.js';
import {
  ADVANTAGE_ESTIMATORS,
  getAdvantageEstimator,
  parseKlEstimator,
  parseLossAggregation,
  parsePreferenceLoss,
} from './registry.js';

beforeAll(useCpu);

describe('registries', () => {
  it('selects advantage estimators by config name', () => {
    // two prompts x two responses, outcome reward on the last token
    const rewards = tf.tensor([
      [0, 1],
      [0, 0],
      [0, 3],
      [0, 1],
    ]);
    const actionMask = tf.tensor([
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    const values = tf.zeros([4, 2]);
    const batch = { rewards, actionMask, values };
    const cfg = { responsesPerPrompt: 2 };
    const expected: Record<string, number[]> = {
      reinforce: [0.5, -0.5, 1, -1],
      'dr-grpo': [0.5, -0.5, 1, -1],
      rloo: [1, -1, 2, -2],
    };
    for (const [name, want] of Object.entries(expected)) {
      const a = take(getAdvantageEstimator(name)(batch, cfg).advantages);
      expectClose([a[1]!, a[3]!, a[5]!, a[7]!], want, 1e-6, name);
    }
    const grpo = take(getAdvantageEstimator('grpo')(batch, cfg).advantages);
    expectClose(grpo[1]!, 0.5 / (Math.SQRT1_2 + 2 ** -23), 1e-6, 'grpo');
    for (const name of Object.keys(ADVANTAGE_ESTIMATORS)) {
      const out = getAdvantageEstimator(name)(batch, cfg);
      expect(Array.from(take(out.advantages)).every(Number.isFinite), name).toBe(true);
      if (out.returns) out.returns.dispose();
    }
    tf.dispose([rewards, actionMask, values]);
  });

  it('gae without values says what to do', () => {
    const r = tf.zeros([1, 1]);
    expect(() => getAdvantageEstimator('gae')({ rewards: r, actionMask: r })).toThrow(
      /needs batch.values/,
    );
    r.dispose();
  });

  it('unknown names list the valid ones', () => {
    try {
      getAdvantageEstimator('ppo');
      expect.fail('should throw');
    } catch (e) {
      expect(e).toBeInstanceOf(AlgosError);
      expect((e as AlgosError).code).toBe('UNKNOWN_NAME');
      expect((e as Error).message).toMatch(
        /unknown adv.estimator "ppo"; valid names: gae, reinforce, grpo, dr-grpo, rloo, reinforce\+\+, reinforce\+\+-baseline/,
      );
    }
    expect(() => getAdvantageEstimator('toString')).toThrow(/valid names/);
    expect(() => parseKlEstimator('k4')).toThrow(/valid names: k1, k2, k3/);
    expect(() => parsePreferenceLoss('kto')).toThrow(/valid names: dpo, ipo, simpo/);
    expect(() => parseLossAggregation('mean')).toThrow(/token-mean, .*sequence/);
  });

  it("maps RL2's avg_level names onto aggregation modes", () => {
    expect(parseLossAggregation('token')).toBe('token-mean');
    expect(parseLossAggregation('sequence')).toBe('seq-mean-token-mean');
    expect(parseLossAggregation('seq-mean-token-sum-norm')).toBe('seq-mean-token-sum-norm');
    expect(parseKlEstimator('k3')).toBe('k3');
    expect(parsePreferenceLoss('ipo')).toBe('ipo');
  });
});
