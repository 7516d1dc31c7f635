import { describe, expect, it } from 'vitest';
import { ParallelError, RankFailedError } from '../src/index.js';
import { COLLECTIVES, freePort, runRanks } from './run-ranks.js';

interface Result {
  rank: number;
  collectives: string;
  size: number;
  failures: string[];
  nodeRank: number;
}

// Every case on Gloo and on the socket fallback (RL2_COLLECTIVES), except the Promise-based
// Collective, which only the sockets implement.
for (const collectives of COLLECTIVES)
  describe(`collectives across real processes (${collectives})`, () => {
    const C = { RL2_COLLECTIVES: collectives };
    it('4 ranks on one node: every collective and sub-group is exact', async () => {
      const { results, error } = await runRanks<Result>('collectives.rank.ts', {
        nprocPerNode: 4,
        env: C,
      });
      expect(error, error?.message).toBeUndefined();
      expect(results.map((r) => r.rank).sort()).toEqual([0, 1, 2, 3]);
      for (const r of results) expect(r.failures).toEqual([]);
      for (const r of results) expect(r.collectives).toBe(collectives);
    });

    it.skipIf(collectives === 'gloo')(
      '3 ranks, Promise-based Collective (createSocketWorld): concurrent ops on one group stay apart',
      async () => {
        const { results, error } = await runRanks<{ rank: number; failures: string[] }>(
          'async-collectives.rank.ts',
          { nprocPerNode: 3 },
        );
        expect(error, error?.message).toBeUndefined();
        expect(results.map((r) => r.rank).sort()).toEqual([0, 1, 2]);
        for (const r of results) expect(r.failures).toEqual([]);
      },
    );

    it('two "nodes" of 2 ranks on loopback agree', async () => {
      const masterPort = await freePort();
      const node = (nodeRank: number) =>
        runRanks<Result>('collectives.rank.ts', {
          nprocPerNode: 2,
          nnodes: 2,
          nodeRank,
          masterAddr: '127.0.0.1',
          masterPort,
          env: C,
        });
      const [a, b] = await Promise.all([node(0), node(1)]);
      expect(a.error).toBeUndefined();
      expect(b.error).toBeUndefined();
      const all = [...a.results, ...b.results];
      expect(all.map((r) => [r.rank, r.nodeRank]).sort()).toEqual([
        [0, 0],
        [1, 0],
        [2, 1],
        [3, 1],
      ]);
      for (const r of all) expect(r.failures).toEqual([]);
      for (const r of all) expect(r.collectives).toBe(collectives);
    });

    it('a failing rank stops every rank and reports its exit code and stderr', async () => {
      const { error } = await runRanks('fail.rank.ts', {
        nprocPerNode: 3,
        env: { ...C, FAIL_MODE: 'exit', FAIL_RANK: '2' },
      });
      expect(error, String(error)).toBeInstanceOf(RankFailedError);
      const e = error as RankFailedError;
      expect(e.rank, e.message).toBe(2);
      expect(e.exitCode).toBe(3);
      expect(e.stderrTail).toContain('rank 2 gives up on purpose');
      expect(e.message).toContain('exit code 3');
    });

    it('a collective timeout names the rank that never arrived', async () => {
      const { error } = await runRanks('fail.rank.ts', {
        nprocPerNode: 3,
        env: { ...C, FAIL_MODE: 'stall', FAIL_RANK: '1', RL2_COLLECTIVE_TIMEOUT_MS: '4000' },
      });
      expect(error, String(error)).toBeInstanceOf(RankFailedError);
      const e = error as RankFailedError;
      expect(e.rank, e.message).not.toBe(1);
      expect(e.stderrTail).toContain('COLLECTIVE_TIMEOUT');
      expect(e.stderrTail, e.message).toMatch(/rank \[1\] never reached it/);
    });

    it('a second node that never comes fails the rendezvous instead of hanging', async () => {
      const { error } = await runRanks('fail.rank.ts', {
        nprocPerNode: 1,
        nnodes: 2,
        env: { ...C, FAIL_MODE: 'none', RL2_RENDEZVOUS_TIMEOUT_MS: '1500' },
      });
      expect(error).toBeInstanceOf(ParallelError);
      expect((error as RankFailedError).stderrTail).toContain('RENDEZVOUS');
    });
  });

for (const collectives of COLLECTIVES)
  describe(`failure across nodes (${collectives})`, () => {
    const C = { RL2_COLLECTIVES: collectives };
    it('a rank failing on node 1 stops node 1 with its error and node 0 through PEER_LOST', async () => {
      const masterPort = await freePort();
      const env = { ...C, FAIL_MODE: 'exit', FAIL_RANK: '3' };
      const node = (nodeRank: number) =>
        runRanks('fail.rank.ts', { nprocPerNode: 2, nnodes: 2, nodeRank, masterPort, env });
      const [a, b] = await Promise.all([node(0), node(1)]);
      expect(b.error, String(b.error)).toBeInstanceOf(RankFailedError);
      expect((b.error as RankFailedError).rank, b.error?.message).toBe(3);
      expect((b.error as RankFailedError).exitCode).toBe(3);
      expect(a.error, String(a.error)).toBeInstanceOf(RankFailedError);
      expect((a.error as RankFailedError).stderrTail, a.error?.message).toContain('PEER_LOST');
      // names a rank of node 1 (rank 3, or rank 2 when its launcher stopped it first)
      expect((a.error as RankFailedError).stderrTail, a.error?.message).toMatch(
        /lost ranks? \[?(\d+, )*[23]\b/,
      );
    });
  });
