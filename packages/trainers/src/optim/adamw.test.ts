import '@tensorflow/tfjs-backend-cpu';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import fixture from '../../fixtures/optim.json' with { type: 'json' };
import { AdamW } from './adamw.js';
import { clipCoefficient, clipGradNorm, gradNorm } from './clip-grad-norm.js';
import { scheduledLr, warmupSteps } from './cosine-schedule.js';

const cfg = fixture.config;
const schedule = {
  lr: cfg.lr,
  minLr: cfg.min_lr,
  warmupRatio: cfg.warmup_ratio,
  totalSteps: cfg.total_steps,
  kind: 'cosine' as const,
};
type Named = Record<string, number[]>;

function expectClose(actual: ArrayLike<number>, expected: readonly number[], tol: number) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++)
    expect(Math.abs(actual[i] - expected[i])).toBeLessThan(tol * (1 + Math.abs(expected[i])));
}

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('cosine schedule (torch LambdaLR reference)', () => {
  it('matches torch at every step', () => {
    for (const [i, s] of fixture.steps.entries())
      expect(scheduledLr(i, schedule)).toBeCloseTo(s.lr, 12);
  });
  it('hand cases: warmup ramp, peak, floor', () => {
    const opts = { lr: 1, minLr: 0.1, warmupRatio: 0.1, totalSteps: 100, kind: 'cosine' as const };
    expect(warmupSteps(opts)).toBe(10);
    expect(scheduledLr(0, opts)).toBe(0);
    expect(scheduledLr(5, opts)).toBe(0.5);
    expect(scheduledLr(10, opts)).toBe(1);
    expect(scheduledLr(55, opts)).toBeCloseTo(0.55, 12);
    expect(scheduledLr(100, opts)).toBeCloseTo(0.1, 12);
    expect(scheduledLr(50, { ...opts, kind: 'constant' })).toBe(1);
  });
});

describe('AdamW + clipGradNorm (torch 1.13 reference)', () => {
  it('reproduces 10 steps of torch.optim.AdamW with clip_grad_norm_', async () => {
    const shapes = fixture.shapes as Record<string, number[]>;
    const params = Object.fromEntries(
      Object.entries(fixture.init as Named).map(([k, v]) => [
        k,
        tf.variable(tf.tensor(v, shapes[k]), true, k),
      ]),
    );
    const opt = new AdamW(params, {
      betas: cfg.betas as [number, number],
      eps: cfg.eps,
      weightDecay: cfg.weight_decay,
    });
    for (const [i, s] of fixture.steps.entries()) {
      const raw = Object.fromEntries(
        Object.entries(s.grads as Named).map(([k, g]) => [k, tf.tensor(g, shapes[k])]),
      );
      const { norm, grads } = await clipGradNorm(raw, cfg.max_norm);
      expect(norm).toBeCloseTo(s.grad_norm, 4);
      opt.step(grads, scheduledLr(i, schedule));
      for (const [k, expected] of Object.entries(s.params as Named))
        expectClose(params[k].dataSync(), expected, 2e-5);
      tf.dispose([...Object.values(raw), ...Object.values(grads)]);
    }
    expect(opt.stepCount).toBe(10);
  });

  // what layoutStep does: no clipped copy of the gradients, the factor applied inside the update,
  // each gradient freed once used; on native the update writes over the parameter and moments
  it.each(['cpu', 'native'])(
    'reproduces the same 10 torch steps with the clip factor folded in and the gradients released (%s)',
    async (backend) => {
      if (backend === 'native') {
        if (!nativeForTests().ok) return expect(nativeForTests().ok).toBe(false);
        await initEngine({ backend: 'native', threads: 1, logger: () => {}, env: {} });
      } else await tf.setBackend('cpu');
      const before = tf.memory().numTensors;
      const shapes = fixture.shapes as Record<string, number[]>;
      const params = Object.fromEntries(
        Object.entries(fixture.init as Named).map(([k, v]) => [
          k,
          tf.tidy(() => tf.variable(tf.tensor(v, shapes[k]), true)),
        ]),
      );
      const opt = new AdamW(params, {
        betas: cfg.betas as [number, number],
        eps: cfg.eps,
        weightDecay: cfg.weight_decay,
      });
      let clipped = 0;
      for (const [i, s] of fixture.steps.entries()) {
        const raw = Object.fromEntries(
          Object.entries(s.grads as Named).map(([k, g]) => [k, tf.tensor(g, shapes[k])]),
        );
        const norm = await gradNorm(raw);
        expect(norm).toBeCloseTo(s.grad_norm, 4);
        if (clipCoefficient(norm, cfg.max_norm) < 1) clipped++;
        opt.step(raw, scheduledLr(i, schedule), {
          gradScale: clipCoefficient(norm, cfg.max_norm),
          release: true,
        });
        for (const g of Object.values(raw)) expect(g.isDisposed).toBe(true);
        for (const [k, expected] of Object.entries(s.params as Named))
          expectClose(params[k].dataSync(), expected, 2e-5);
      }
      expect(clipped).toBeGreaterThan(0); // the fixture does exercise clipping
      opt.dispose();
      tf.dispose(Object.values(params));
      expect(tf.memory().numTensors).toBe(before);
      await tf.setBackend('cpu');
    },
  );

  it('gradScale without release leaves the caller gradients as they were', () => {
    const p = { w: tf.variable(tf.tensor([1, 2]), true) };
    const g = tf.tensor([4, -8]);
    new AdamW(p, { betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0 }).step({ w: g }, 0.1, {
      gradScale: 0.5,
    });
    expect(Array.from(g.dataSync())).toEqual([4, -8]);
    expect(g.isDisposed).toBe(false);
    tf.dispose([g, p.w]);
  });

  it('state round-trips: a restored optimizer continues identically', async () => {
    const mk = () => ({ x: tf.variable(tf.tensor([1, -2, 3]), true) });
    const a = mk();
    const b = mk();
    const optA = new AdamW(a, { betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01 });
    const g = { x: tf.tensor([0.5, 0.1, -0.3]) };
    optA.step(g, 0.1);
    b.x.assign(a.x);
    const optB = new AdamW(b, { betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01 });
    optB.loadState(await optA.state());
    optA.step(g, 0.1);
    optB.step(g, 0.1);
    expectClose(b.x.dataSync(), Array.from(a.x.dataSync()), 1e-7);
    expect(() =>
      optB.loadState({
        step: 1,
        moments: { x: { shape: [2], m: new Float32Array(2), v: new Float32Array(2) } },
      }),
    ).toThrow(/shape/);
  });

  it('hand case: first step moves each weight by lr (sign of gradient), decay first', () => {
    const p = { w: tf.variable(tf.tensor([2, -2]), true) };
    new AdamW(p, { betas: [0.9, 0.999], eps: 0, weightDecay: 0.5 }).step(
      { w: tf.tensor([3, -0.001]) },
      0.1,
    );
    // p*(1 - 0.1*0.5) - 0.1*sign(g) = [1.9 - 0.1, -1.9 + 0.1]
    expectClose(p.w.dataSync(), [1.8, -1.8], 1e-6);
  });

  it('clipGradNorm by hand: norm 5 clipped to 1', async () => {
    const { norm, grads } = await clipGradNorm({ a: tf.tensor([3]), b: tf.tensor([0, 4]) }, 1);
    expect(norm).toBeCloseTo(5, 6);
    expectClose(grads.a.dataSync(), [0.6], 1e-5);
    expectClose((await clipGradNorm({ a: tf.tensor([0.3]) }, 1)).grads.a.dataSync(), [0.3], 1e-7);
  });
});
