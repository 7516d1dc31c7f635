import { describe, expect, it } from 'vitest';
import { RankFailedError } from '../src/index.js';
import { COLLECTIVES, freePort, runRanks } from './run-ranks.js';

// What a rank says when the rendezvous cannot complete (issue 26 item 14): ranks started with
// other collectives fail at once naming both, a missing rank is named ([1], not [/1]) on both
// implementations, and rank 0 says for whom it waits while it waits.
const tail = (e: Error | undefined) => (e instanceof RankFailedError ? e.stderrTail : String(e));

describe.runIf(COLLECTIVES.includes('gloo'))('ranks with different collectives', () => {
  for (const [first, second] of [
    ['gloo', 'sockets'],
    ['sockets', 'gloo'],
  ] as const)
    it(`rank 0 on ${first}, rank 1 on ${second}: both fail at once, naming both`, async () => {
      const masterPort = await freePort();
      // a timeout far beyond the test's own: only failing at once passes
      const node = (nodeRank: number, collectives: string) =>
        runRanks('fail.rank.ts', {
          nprocPerNode: 1,
          nnodes: 2,
          nodeRank,
          masterPort,
          env: {
            RL2_COLLECTIVES: collectives,
            FAIL_MODE: 'none',
            RL2_RENDEZVOUS_TIMEOUT_MS: '120000',
          },
        });
      const [a, b] = await Promise.all([node(0, first), node(1, second)]);
      const name = (c: string) => (c === 'gloo' ? 'Gloo' : 'socket');
      expect(tail(a.error)).toContain(
        `rank 0 runs the ${name(first)} collectives but rank 1 runs the ${name(second)} collectives`,
      );
      // rank 1's own words: "rank 1 runs ..." (sockets) or "rank 1: this rank runs ..." (Gloo)
      expect(tail(b.error)).toMatch(
        new RegExp(
          `rank 1:? (this rank )?runs the ${name(second)} collectives but rank 0 at ` +
            `MASTER_ADDR=\\S+ MASTER_PORT=${masterPort} runs (the )?${first === 'gloo' ? 'gloo' : 'socket'}`,
        ),
      );
      for (const e of [a.error, b.error]) expect(tail(e)).toContain('same RL2_COLLECTIVES');
    }, 30_000);
});

for (const collectives of COLLECTIVES)
  describe(`a rank that never comes (${collectives})`, () => {
    it('is named by rank 0, which says for whom it waits meanwhile', async () => {
      const { error } = await runRanks('fail.rank.ts', {
        nprocPerNode: 1,
        nnodes: 2,
        env: { RL2_COLLECTIVES: collectives, FAIL_MODE: 'none', RL2_RENDEZVOUS_TIMEOUT_MS: '2000' },
      });
      expect(error, String(error)).toBeInstanceOf(RankFailedError);
      expect(tail(error)).toMatch(
        /rank 0: ranks \[1\] never reached the rendezvous at MASTER_ADDR=/,
      );
      expect(tail(error)).toMatch(/rank 0: waiting at the rendezvous at .* for ranks \[1\]/);
    }, 20_000);
  });
