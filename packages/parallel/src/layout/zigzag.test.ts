import { describe, expect, it } from 'vitest';
import { fixture } from '../../test/fixture.js';
import { planZigzag } from './zigzag.js';

describe('planZigzag', () => {
  it('matches the numpy reference for cp=2 and inverts the rank-major concatenation', () => {
    const f = fixture('cp_attention.json');
    const plan = planZigzag(f.cu_seqlens, 2);
    expect(plan.indices).toEqual(f.zigzag2);
    expect(plan.inverse).toEqual(f.zigzag2_np);
    const concat = plan.indices.flat();
    expect(plan.inverse.map((k) => concat[k])).toEqual(
      Array.from({ length: plan.length }, (_, i) => i),
    );
  });

  it('hand case: one sequence of 8 over cp=2 keeps chunks (0,3) and (1,2)', () => {
    const plan = planZigzag([0, 8], 2);
    expect(plan.indices).toEqual([
      [0, 1, 6, 7],
      [2, 3, 4, 5],
    ]);
    expect(plan.positions).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('balances causal work: every rank attends to the same number of (query, key) pairs', () => {
    const plan = planZigzag([0, 16, 48], 4);
    const work = plan.indices.map((idx) => idx.reduce((s, p) => s + plan.positions[p]! + 1, 0));
    expect(new Set(work).size).toBe(1);
  });

  it('names the sequence that does not split into 2*cp chunks', () => {
    expect(() => planZigzag([0, 8, 14], 2)).toThrow(
      /sequence 1 has length 6, not a multiple of 2\*cp = 4/,
    );
  });
});
