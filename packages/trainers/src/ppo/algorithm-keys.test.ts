import {
  type ActorPpoOptions,
  type KlEstimator,
  actorPpoLoss,
  approxKl,
  criticValueLoss,
  getAdvantageEstimator,
  klPenalizedAdvantages,
  klPenalizedRewards,
  parseLossAggregation,
} from '@rl2/algos';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load-config.js';
import { ppoConfigSchema } from './ppo-config.js';
import { runPpo } from './run-ppo.js';
import { GROUP, algorithmFixture } from '../../test/ppo-fixtures/algorithm-fixture.js';
import { QUIET_TRAINER, tinyRun } from '../../test/ppo-fixtures/tiny-run.js';

/**
 * Every algorithm key of `rl2 ppo` reaches the loss: one real PPO step (`ppoPasses` + `ppoUpdate`, the
 * step body of runPpo) of the tiny actor on the shared batch per option, and its logged loss
 * and metrics equal what @rl2/algos computes for that option on the same batch, and differ
 * from the default's. The batch was sampled by another checkpoint (ratios 0.86..1.25), so
 * clipping, dual-clip, GSPO and TIS act on it.
 */

type Fixture = Awaited<ReturnType<typeof algorithmFixture>>;
type Values = Record<string, number>;
let f: Fixture;
let defaults: Values;

/** The algos reference: advantages of the estimator `name` on the fixture batch (rewards optionally KL-penalised). */
function referenceAdvantages(
  name: string,
  opts: { normVar?: boolean; klReward?: { coef: number; estimator: KlEstimator } } = {},
): number[][] {
  return tf.tidy(() => {
    const x = f.tensors();
    const rewards = opts.klReward
      ? klPenalizedRewards(
          x.rewards,
          approxKl(x.oldLogps, x.refLogps, opts.klReward.estimator),
          x.actionMask,
          opts.klReward.coef,
        )
      : x.rewards;
    const values = name === 'gae' ? { values: tf.zerosLike(x.rewards) } : {};
    const out = getAdvantageEstimator(name)(
      { rewards, actionMask: x.actionMask, trajectoryIds: x.trajectoryIds, ...values },
      {
        gamma: 1,
        lambda: 1,
        responsesPerPrompt: GROUP,
        normVar: opts.normVar ?? false,
        globalBaseline: false,
      },
    );
    return out.advantages.arraySync() as number[][];
  });
}

/** The algos reference: `actorPpoLoss` on the fixture batch, as the trainer logs it (`actor/loss`, `actor/<metric>`). */
function referenceActor(advantages: number[][], options: ActorPpoOptions = {}): Values {
  const x = f.tensors();
  const adv = tf.tensor2d(advantages);
  try {
    const res = actorPpoLoss({ ...x, advantages: adv }, { clip: 0.2, ...options });
    const out: Values = { 'actor/loss': res.loss.dataSync()[0] };
    for (const [k, v] of Object.entries(res.metrics)) {
      out[`actor/${k}`] = v!.dataSync()[0]!;
      v!.dispose();
    }
    res.loss.dispose();
    return out;
  } finally {
    tf.dispose([...Object.values(x), adv]);
  }
}

/** `value(i, t)` on every action token of the fixture batch. */
const onActions = (value: (i: number, t: number) => number): number[] =>
  f.batch.sequences.flatMap((s, i) =>
    s.actionMask.flatMap((m, t) => (m === 1 ? [value(i, t)] : [])),
  );
const sumOf = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0);

/** The step logged `want` (to float32 precision) on every key of `want`, and `key` moved away from the default. */
function expectReaches(got: Values, want: Values, key = 'actor/loss') {
  for (const [k, v] of Object.entries(want)) {
    if (k === 'actor/entropy' || k === 'actor/engineApproxKl') continue;
    expect(got[k], k).toBeCloseTo(v, 5);
  }
  // 20x the tolerance above: the option moved the value, the match is not the default's
  expect(
    Math.abs(want[key] - (defaults[key] ?? 0)),
    `${key} equals the default's ${defaults[key]}`,
  ).toBeGreaterThan(1e-4);
}

beforeAll(async () => {
  f = await algorithmFixture();
  defaults = (await f.step()).values;
}, 60_000);

describe('rl2 ppo defaults (Dr. GRPO: reinforce, token-mean, clip 0.2)', () => {
  it('log the loss, clip fraction and KL to the sampler that @rl2/algos computes', () => {
    const want = referenceActor(referenceAdvantages('reinforce'));
    for (const k of ['actor/loss', 'actor/pgLoss', 'actor/clipFraction', 'actor/approxKl'])
      expect(defaults[k], k).toBeCloseTo(want[k], 5);
    expect(defaults['actor/clipFraction']).toBeGreaterThan(0);
    expect(defaults['actor/dualClipFraction']).toBeUndefined();
    expect(defaults['actor/klLoss']).toBeUndefined();
  });
});

describe('adv.estimator', () => {
  it.each(['grpo', 'rloo', 'reinforce++', 'reinforce++-baseline'])('%s', async (name) => {
    const got = (await f.step([`adv.estimator=${name}`])).values;
    expectReaches(got, referenceActor(referenceAdvantages(name)));
  });

  it('dr-grpo never divides by the std, even with adv.norm_var=true (which makes reinforce GRPO)', async () => {
    const drGrpo = (await f.step(['adv.estimator=dr-grpo', 'adv.norm_var=true'])).values;
    const normed = (await f.step(['adv.norm_var=true'])).values;
    expect(drGrpo['actor/loss']).toBeCloseTo(defaults['actor/loss'], 6);
    expectReaches(normed, referenceActor(referenceAdvantages('reinforce', { normVar: true })));
  });

  it('rloo is reinforce scaled by G / (G - 1) (hand-derived), so its loss moves', () => {
    const rloo = referenceAdvantages('rloo');
    const reinforce = referenceAdvantages('reinforce');
    const scaled = onActions((i, t) => rloo[i][t] - (reinforce[i][t] * GROUP) / (GROUP - 1));
    expect(Math.max(...scaled.map(Math.abs))).toBeLessThan(1e-6);
  });

  it('gae trains a critic (zero value head): whitened rewards-to-go for the actor, (V - R)^2 for the critic', async () => {
    const got = (await f.step(['adv.estimator=gae'])).values;
    const adv = referenceAdvantages('gae');
    expectReaches(got, referenceActor(adv));
    const x = f.tensors();
    const returns = getAdvantageEstimator('gae')({
      rewards: x.rewards,
      actionMask: x.actionMask,
      trajectoryIds: x.trajectoryIds,
      values: tf.zerosLike(x.rewards),
    }).returns as tf.Tensor;
    const zeros = tf.zerosLike(x.rewards);
    const critic = criticValueLoss(
      { actionMask: x.actionMask, values: zeros, oldValues: zeros, returns },
      { clip: 0.5 },
    );
    expect(got['critic/loss']).toBeCloseTo(critic.loss.dataSync()[0], 5);
    tf.dispose([...Object.values(x), returns, zeros, critic.loss]);
  });
});

describe('actor: ratio, clip bounds, dual-clip, TIS', () => {
  it('actor.loss=gspo: one length-normalised ratio per sequence (GSPO)', async () => {
    const got = (await f.step(['actor.loss=gspo'])).values;
    // the sequence ratios stay inside the clip range where some token ratios leave it
    expectReaches(
      got,
      referenceActor(referenceAdvantages('reinforce'), { ratioLevel: 'sequence' }),
      'actor/clipFraction',
    );
  });

  it('actor.clip_low and actor.clip_high clip each side separately (DAPO clip-higher)', async () => {
    const low = (await f.step(['actor.clip_low=0.05'])).values;
    const high = (await f.step(['actor.clip_high=0.05'])).values;
    const adv = referenceAdvantages('reinforce');
    const wantLow = referenceActor(adv, { clipLow: 0.05, clipHigh: 0.2 });
    const wantHigh = referenceActor(adv, { clipLow: 0.2, clipHigh: 0.05 });
    expectReaches(low, wantLow, 'actor/clipFraction');
    expectReaches(high, wantHigh, 'actor/clipFraction');
    expect(Math.abs(wantLow['actor/loss'] - wantHigh['actor/loss'])).toBeGreaterThan(1e-3);
  });

  it('actor.dual_clip caps the loss of negative advantages at -c * A', async () => {
    const got = (await f.step(['actor.dual_clip=1.05'])).values;
    const want = referenceActor(referenceAdvantages('reinforce'), { dualClip: 1.05 });
    expect(want['actor/dualClipFraction']).toBeGreaterThan(0);
    expectReaches(got, want);
  });

  it('actor.tis_coef truncates exp(logp - engine_logp) where the cap binds', async () => {
    // the cap binds on the tokens whose ratio to the sampler exceeds 1
    const ratios = onActions((i, t) => Math.exp(f.current[i][t] - f.old[i][t]));
    expect(ratios.filter((r) => r > 1).length).toBeGreaterThan(3);
    expect(ratios.filter((r) => r < 1).length).toBeGreaterThan(3);
    const got = (await f.step(['actor.tis_coef=1'])).values;
    const adv = referenceAdvantages('reinforce');
    const want = referenceActor(adv, { tisCoef: 1 });
    expectReaches(got, want);
    // the truncation itself moves the loss: a cap that never binds (100) gives another value
    const uncapped = referenceActor(adv, { tisCoef: 100 });
    expect(Math.abs(want['actor/loss'] - uncapped['actor/loss'])).toBeGreaterThan(1e-4);
  });
});

describe('actor.avg_level: the four loss aggregations', () => {
  it.each([
    ['sequence', 'seq-mean-token-mean'],
    ['seq-mean-token-mean', 'seq-mean-token-mean'],
    ['seq-mean-token-sum', 'seq-mean-token-sum'],
    ['seq-mean-token-sum-norm', 'seq-mean-token-sum-norm'],
  ] as const)('%s', async (level, mode) => {
    const got = (await f.step([`actor.avg_level=${level}`, 'actor.norm_length=8'])).values;
    expect(parseLossAggregation(level)).toBe(mode);
    expectReaches(
      got,
      referenceActor(referenceAdvantages('reinforce'), { aggregation: { mode, normLength: 8 } }),
    );
  });

  it('token-mean is the default token', async () => {
    const got = (await f.step(['actor.avg_level=token-mean'])).values;
    expect(got['actor/loss']).toBeCloseTo(defaults['actor/loss'], 6);
  });
});

describe('kl: as reward, advantage or loss, with k1 / k2 / k3, fixed or adaptive', () => {
  const coef = 0.5;
  const types = ['reward', 'advantage', 'loss'] as const;
  const estimators = ['k1', 'k2', 'k3'] as const;
  const cases = types.flatMap((type) => estimators.map((estimator) => [type, estimator] as const));

  it.each(cases)('kl.type=%s with %s', async (type, estimator) => {
    const key = type === 'loss' ? 'kl.loss_estimator' : 'kl.reward_estimator';
    const run = await f.step([
      `kl.coef=${coef}`,
      `kl.type=${type}`,
      `${key}=${estimator}`,
      `ref_actor.model_name=${f.refModel}`,
    ]);
    let want: Values;
    if (type === 'reward') {
      want = referenceActor(referenceAdvantages('reinforce', { klReward: { coef, estimator } }));
    } else if (type === 'advantage') {
      const adv = tf.tidy(() => {
        const x = f.tensors();
        const plain = tf.tensor2d(referenceAdvantages('reinforce'));
        return klPenalizedAdvantages(
          plain,
          approxKl(x.oldLogps, x.refLogps, estimator),
          x.actionMask,
          coef,
        ).arraySync() as number[][];
      });
      want = referenceActor(adv);
    } else {
      want = referenceActor(referenceAdvantages('reinforce'), { kl: { coef, estimator } });
      // the loss is the default's plus coef * KL; k1 = logp - ref_logp can be negative on a sample, k2 and k3 never are
      expect(run.values['actor/loss'] - defaults['actor/loss']).toBeCloseTo(
        coef * run.values['actor/klLoss'],
        6,
      );
      if (estimator !== 'k1') expect(run.values['actor/klLoss']).toBeGreaterThan(0);
    }
    expectReaches(run.values, want);
    // kl/ref: mean k1 KL(old || ref) over action tokens, whatever the placement
    const k1 = onActions((i, t) => f.old[i][t] - f.reference[i][t]);
    expect(run.values['kl/ref']).toBeCloseTo(sumOf(k1) / k1.length, 5);
    expect(run.values['kl/coef']).toBe(coef);
  });

  it('kl.target adapts kl.coef after the step: coef * (1 + clip(KL / target - 1, +-0.2) * sequences / horizon)', async () => {
    // KL per sequence = sum of k1 over its action tokens, averaged over the 8 sequences (hand-derived)
    const kl = sumOf(onActions((i, t) => f.old[i][t] - f.reference[i][t])) / 8;
    expect(kl).toBeGreaterThan(0);
    for (const target of [kl / 1.1, kl * 10]) {
      const run = await f.step([
        'kl.coef=0.1',
        'kl.type=loss',
        `kl.target=${target}`,
        'kl.horizon=100',
        `ref_actor.model_name=${f.refModel}`,
      ]);
      const e = Math.min(Math.max(kl / target - 1, -0.2), 0.2);
      expect(run.values['kl/coef']).toBe(0.1);
      expect(run.klCoef, `target ${target}`).toBeCloseTo(0.1 * (1 + (e * 8) / 100), 8);
      expect(run.klCoef).not.toBeCloseTo(0.1, 5);
    }
  });
});

describe('rl2 ppo carries the adaptive KL coefficient', () => {
  it('from step to step and into the checkpoint (kl.target, kl.horizon)', async () => {
    const t = tinyRun('adaptive-kl');
    const saveDir = join(t.dir, 'run');
    const config = loadConfig(ppoConfigSchema, {
      overrides: [
        ...t.overrides(),
        'rollout.train_prompts_per_rollout=2',
        'rollout.responses_per_prompt=2',
        'rollout.train_sampling_params.max_new_tokens=3',
        'rollout.dynamic_filtering=false',
        'kl.coef=0.1',
        'kl.type=reward',
        'kl.target=1e-9',
        'kl.horizon=100',
        'actor.lr=5e-2',
        'trainer.max_steps=3',
        `trainer.save_dir=${saveDir}`,
        ...QUIET_TRAINER,
      ],
    });
    const res = await runPpo(config, {
      stdout: new Writable({ write: (_c, _e, cb) => cb() }) as unknown as NodeJS.WriteStream,
    });
    const coefs = res.steps.map((s) => s['kl/coef']);
    // step 1: the reference is the actor itself, KL = 0 exactly: e = clip(0 / target - 1) = -0.2, over 4 sequences
    expect(res.steps[0]['kl/ref']).toBe(0);
    expect(coefs[1]).toBeCloseTo(0.1 * (1 - (0.2 * 4) / 100), 10);
    // step 2 on: KL far above the tiny target (e = +0.2) once the actor has moved
    const e = (s: number) => Math.sign(res.steps[s]['kl/ref']) * 0.2;
    expect(coefs[2]).toBeCloseTo(coefs[1] * (1 + (e(1) * 4) / 100), 10);
    const next = coefs[2] * (1 + (e(2) * 4) / 100);
    const state = JSON.parse(
      readFileSync(join(saveDir, 'step-3', 'trainer_state.json'), 'utf8'),
    ) as { klCoef: number };
    expect(state.klCoef).toBeCloseTo(next, 10);
  });
});
