import { createServer } from 'node:net';

/**
 * A TCP port that was free a moment ago, for `launch({ masterPort })` when several launches run
 * on one host (tests, sweeps). Drawn below Linux's ephemeral range (32768+) so that the ranks'
 * own listeners (port 0) and other connections cannot take it in between.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}
