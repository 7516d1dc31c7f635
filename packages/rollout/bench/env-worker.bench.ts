// pnpm bench env-worker: what running an env in worker threads (loadEnvironment) costs per
// step() call, against the same module called in the main thread (createEnvironment, the
// reference, no isolation). One call at a time (latency) and 64 in flight (a rollout's
// concurrency), with a trivial step (so the table shows the cost of crossing threads), a .mjs and a .ts env.
// Medians of 7 interleaved rounds (the machine is shared: single runs are noisy).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEnvironment, loadEnvironment } from '../src/index.js';
import type { EnvModule, Environment } from '../src/index.js';

const CALLS = 2000;
const IN_FLIGHT = 64;
const dir = mkdtempSync(join(tmpdir(), 'rl2-env-bench-'));
const body = `
  return [null, action.length % 2, true];`;
writeFileSync(
  join(dir, 'env.mjs'),
  `export async function step(state, action, answer) {${body}\n}\n`,
);
writeFileSync(
  join(dir, 'env.ts'),
  `export async function step(state: string, action: string, answer: unknown): Promise<[null, number, boolean]> {${body}\n}\n`,
);

/** Mean milliseconds per call: `calls` calls, `inFlight` at a time. */
async function perCall(
  env: Environment,
  action: string,
  calls: number,
  inFlight: number,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < calls) {
        next += 1;
        await env.step('What is 2+2?', action, { answer: 4 });
      }
    }),
  );
  return (performance.now() - start) / calls;
}

const inThread = createEnvironment(
  (await import(pathToFileURL(join(dir, 'env.mjs')).href)) as EnvModule,
);
const cases: [string, Environment][] = [
  ['main thread (reference)', inThread],
  ['1 worker, .mjs', await loadEnvironment(join(dir, 'env.mjs'))],
  ['1 worker, .ts (tsx)', await loadEnvironment(join(dir, 'env.ts'))],
  ['2 workers, .mjs', await loadEnvironment(join(dir, 'env.mjs'), { workers: 2 })],
];
const ROUNDS = 7;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const rows: Record<string, string>[] = [];
{
  const [action, calls] = ['a', CALLS];
  for (const inFlight of [1, IN_FLIGHT]) {
    for (const [, env] of cases) await perCall(env, action, 200, inFlight); // warm-up
    // rounds interleave the cases, so that load from other processes falls on all of them; medians
    const times = cases.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [k, [, env]] of cases.entries())
        times[k]?.push(await perCall(env, action, calls, inFlight));
    }
    const reference = median(times[0] as number[]);
    for (const [k, [name]] of cases.entries()) {
      const ms = median(times[k] as number[]);
      rows.push({
        'in flight': String(inFlight),
        env: name,
        'ms/call (median)': ms.toFixed(4),
        'overhead ms/call': (ms - reference).toFixed(4),
        'vs main thread': `${(ms / reference).toFixed(2)}x`,
      });
    }
  }
}
console.log(
  `env step() calls through worker threads, ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown cpu'})`,
);
console.table(rows);
for (const [, env] of cases) await env.close?.();
rmSync(dir, { recursive: true, force: true });
