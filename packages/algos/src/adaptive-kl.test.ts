import { describe, expect, it } from 'vitest';
import { expectClose, fixture } from '../test/helpers.js';
import { adaptiveKlCoef } from './adaptive-kl.js';

const fx = fixture<{
  target: number;
  horizon: number;
  steps: { coef: number; observedKl: number; nSteps: number; next: number }[];
}>('adaptive-kl.json');

describe('adaptiveKlCoef', () => {
  it('follows the reference over several steps (raises above target, lowers below, clips the error at 0.2)', () => {
    let coef = fx.steps[0]!.coef;
    for (const s of fx.steps) {
      coef = adaptiveKlCoef(coef, s.observedKl, s.nSteps, {
        target: fx.target,
        horizon: fx.horizon,
      });
      expectClose(coef, s.next, 1e-12);
    }
  });

  it('rejects a non-positive target', () => {
    expect(() => adaptiveKlCoef(0.1, 1, 1, { target: 0, horizon: 10 })).toThrow(/target = 0/);
  });
});
