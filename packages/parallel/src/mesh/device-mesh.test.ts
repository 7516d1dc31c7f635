import { describe, expect, it } from 'vitest';
import { planDeviceMesh } from './device-mesh.js';

describe('planDeviceMesh', () => {
  it('8 ranks, ddp=2 tp=2 cp=2: hand-laid groups', () => {
    // model mesh (ddp, fsdp, tp) = (2, 2, 2); data mesh (dp, cp, tp) = (2, 2, 2)
    const m = planDeviceMesh(8, 5, { ddp: 2, tp: 2, cp: 2 });
    expect(m.sizes).toEqual({ ddp: 2, fsdp: 2, tp: 2, dp: 2, cp: 2 });
    expect(m.coords).toEqual({ ddp: 1, fsdp: 0, tp: 1, dp: 1, cp: 0 });
    expect(m.groups).toEqual({ tp: [4, 5], fsdp: [5, 7], ddp: [1, 5], cp: [5, 7], dp: [1, 5] });
  });

  it('every axis partitions the world, and each rank is in its own groups', () => {
    for (const sizes of [
      { ddp: 1 },
      { ddp: 2 },
      { tp: 2 },
      { cp: 4 },
      { ddp: 2, tp: 2, cp: 2 },
      { tp: 4, cp: 2 },
    ]) {
      const W = 8;
      for (const axis of ['ddp', 'fsdp', 'tp', 'dp', 'cp'] as const) {
        const groups = new Set(
          Array.from({ length: W }, (_, r) => planDeviceMesh(W, r, sizes).groups[axis].join(',')),
        );
        const members = [...groups].flatMap((g) => g.split(',').map(Number)).sort((a, b) => a - b);
        expect(members, `${axis} ${JSON.stringify(sizes)}`).toEqual(
          Array.from({ length: W }, (_, i) => i),
        );
      }
      for (let r = 0; r < W; r++) {
        const m = planDeviceMesh(W, r, sizes);
        for (const axis of ['ddp', 'fsdp', 'tp', 'dp', 'cp'] as const)
          expect(m.groups[axis][m.coords[axis]]).toBe(r);
        expect(m.sizes.ddp * m.sizes.fsdp * m.sizes.tp).toBe(W);
        expect(m.sizes.dp * m.sizes.cp * m.sizes.tp).toBe(W);
      }
    }
  });

  it('ddp=1 is ZeRO-3: one fsdp group over the whole world', () => {
    expect(planDeviceMesh(4, 2).groups.fsdp).toEqual([0, 1, 2, 3]);
  });

  it.each([
    [6, { ddp: 4 }, /not divisible by ddp\*tp = 4\*1 = 4/],
    [4, { cp: 3 }, /not divisible by cp\*tp = 3\*1 = 3/],
    [8, { tp: 2, cp: 3 }, /cp\*tp = 3\*2 = 6/],
    [4, { tp: 0 }, /tp=0 must be a positive integer/],
  ])('world %i with %j is rejected with the rule', (W, sizes, msg) => {
    expect(() => planDeviceMesh(W, 0, sizes)).toThrow(msg);
  });
});
