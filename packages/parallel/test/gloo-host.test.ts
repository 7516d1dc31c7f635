import { describe, expect, it } from 'vitest';
import { RankFailedError } from '../src/index.js';
import { COLLECTIVES, runRanks } from './run-ranks.js';

// RL2_GLOO_HOST as users of torch pass GLOO_SOCKET_IFNAME (an interface name), an address, or
// a name that does not resolve: the first two work, the last fails with a message, never a
// segfault of the Gloo addon (issue 26 item 12).
describe.runIf(COLLECTIVES.includes('gloo'))('RL2_GLOO_HOST', () => {
  const env = (host: string) => ({
    RL2_COLLECTIVES: 'gloo',
    FAIL_MODE: 'none',
    RL2_GLOO_HOST: host,
    RL2_RENDEZVOUS_TIMEOUT_MS: '3000',
  });
  it('takes an interface name (lo) or an address (127.0.0.1)', async () => {
    for (const host of ['lo', '127.0.0.1']) {
      const { error } = await runRanks('fail.rank.ts', { nprocPerNode: 2, env: env(host) });
      expect(error, `${host}: ${String(error)}`).toBeUndefined();
    }
  });
  it('fails naming RL2_GLOO_HOST for a host that neither names an interface nor resolves', async () => {
    const { error } = await runRanks('fail.rank.ts', {
      nprocPerNode: 2,
      env: env('no-such-host.invalid'),
    });
    expect(error, String(error)).toBeInstanceOf(RankFailedError);
    const e = error as RankFailedError;
    expect(e.signal, e.message).toBeNull();
    expect(e.exitCode, e.message).toBe(1);
    expect(e.stderrTail).toContain('RL2_GLOO_HOST="no-such-host.invalid"');
    expect(e.stderrTail).toMatch(/interfaces: .*lo/);
  });
});
