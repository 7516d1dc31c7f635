// One rank of `pnpm bench parallel`. BENCH_PATH=blocking times ProcessGroup all-reduces (the
// path training uses) on the collectives RL2_COLLECTIVES selects: gloo (the addon's native
// thread per group) or sockets (the compute thread waits on Atomics while the worker thread
// moves the bytes); BENCH_PATH=async times the socket Promise-based Collective on the main
// thread. Rank 0 prints `RESULT <json>` lines.
import { createSocketWorld, initProcessGroup, readLaunchEnv } from '../src/index.js';

const sizes = (process.env.BENCH_SIZES ?? '1024,1048576').split(',').map(Number); // float32 values
const transport = process.env.BENCH_TRANSPORT as 'auto' | 'tcp';
const budgetMs = Number(process.env.BENCH_BUDGET_MS ?? 1000);
const maxIters = 200;

interface Ops {
  rank: number;
  size: number;
  allReduce(buf: Float32Array, op: 'sum' | 'max'): Promise<Float32Array>;
  close(): Promise<void>;
}

async function open(): Promise<Ops> {
  if (process.env.BENCH_PATH === 'async') {
    const sw = await createSocketWorld(readLaunchEnv(), { transport });
    return {
      rank: sw.world.rank,
      size: sw.world.size,
      allReduce: (b, op) => sw.world.allReduce(b, op),
      close: async () => sw.close(),
    };
  }
  const w = await initProcessGroup({ transport });
  return {
    rank: w.rank,
    size: w.size,
    allReduce: async (b, op) => w.allReduce(b, op),
    close: () => w.close(),
  };
}

const g = await open();

// 2 warm-up calls, 3 calls to estimate, then as many calls as fit in budgetMs (5 to maxIters;
// rank 0 decides and every rank follows through an all-reduce) timed back to back. The buffers
// hold zeros, so repeated sums stay finite.
async function time(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  await fn();
  let t0 = performance.now();
  for (let i = 0; i < 3; i++) await fn();
  const est = (performance.now() - t0) / 3;
  const count = Float32Array.of(
    g.rank === 0 ? Math.max(5, Math.min(maxIters, Math.floor(budgetMs / Math.max(est, 1e-3)))) : 0,
  );
  const iters = (await g.allReduce(count, 'max'))[0]!;
  t0 = performance.now();
  for (let i = 0; i < iters; i++) await fn();
  return (performance.now() - t0) / iters;
}

for (const n of sizes) {
  const buf = new Float32Array(n);
  const ms = await time(() => g.allReduce(buf, 'sum'));
  if (g.rank === 0) console.log(`RESULT ${JSON.stringify({ ranks: g.size, bytes: n * 4, ms })}`);
}
await g.close();
