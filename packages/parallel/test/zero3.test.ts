import { describe, expect, it } from 'vitest';
import { COLLECTIVES, runRanks } from './run-ranks.js';

interface Result {
  rank: number;
  collectives: string;
  shardFloats: number;
  totalFloats: number;
  fsdp: number;
  errors: Record<string, number>;
}

describe('ZeRO-3 (Zero3Params): parameters sharded, gathered per unit in the pass, gradients reduce-scattered', () => {
  // both sizes on the first of COLLECTIVES (Gloo when built), 2 ranks on the socket fallback
  for (const [ranks, ddp, collectives] of [
    [2, 1, COLLECTIVES[0]!],
    [4, 2, COLLECTIVES[0]!],
    ...(COLLECTIVES.length > 1 ? [[2, 1, COLLECTIVES[1]!] as const] : []),
  ] as const) {
    it(`${ranks} ranks (ddp ${ddp} x fsdp ${ranks / ddp}, ${collectives}): shard gradients of two passes, global norm, gathers and fresh values after a change equal the full-tensor maths`, async () => {
      const { results, error } = await runRanks<Result>('zero3.rank.ts', {
        nprocPerNode: ranks,
        env: { RL2_COLLECTIVES: collectives, DDP: String(ddp) },
      });
      expect(error, error?.message).toBeUndefined();
      expect(results.map((r) => r.rank).sort()).toEqual(Array.from({ length: ranks }, (_, i) => i));
      for (const r of results) {
        expect(r.collectives).toBe(collectives);
        expect(r.fsdp).toBe(ranks / ddp);
        // each rank holds 1/fsdp of the parameters (each of the 3 units padded to a multiple of fsdp)
        expect(r.shardFloats).toBeGreaterThanOrEqual(r.totalFloats / r.fsdp);
        expect(r.shardFloats).toBeLessThanOrEqual(r.totalFloats / r.fsdp + 3);
        expect(Object.keys(r.errors).length).toBe(13);
        for (const [what, e] of Object.entries(r.errors))
          expect(e, `rank ${r.rank} ${what}`).toBeLessThan(1e-5);
      }
    }, 60_000);
  }
});
