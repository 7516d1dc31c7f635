// One rank of `pnpm bench parallel`. BENCH_PATH=blocking times ProcessGroup all-reduces (the
// path training uses: the compute thread waits on Atomics while the worker thread moves the
// bytes); BENCH_PATH=async times the Promise-based Collective on the main thread (no worker,
// no extra copies). Rank 0 also times a memcpy of the same size and prints `RESULT <json>` lines.
import { createSocketWorld, initProcessGroup, readLaunchEnv } from '../src/index.js';

const sizes = (process.env.BENCH_SIZES ?? '1024,65536,1048576,8388608').split(',').map(Number); // float32 values
const transport = process.env.BENCH_TRANSPORT as 'auto' | 'tcp';
const budgetMs = 1000;
const maxIters = 50;

interface Ops {
  rank: number;
  size: number;
  allReduce(buf: Float32Array, op: 'sum' | 'max'): Promise<Float32Array>;
  close(): Promise<void>;
}

async function open(): Promise<Ops> {
  if (process.env.BENCH_PATH === 'async') {
    const sw = await createSocketWorld(readLaunchEnv(), { transport });
    return { rank: sw.world.rank, size: sw.world.size, allReduce: (b, op) => sw.world.allReduce(b, op), close: async () => sw.close() };
  }
  const w = await initProcessGroup({ transport });
  return { rank: w.rank, size: w.size, allReduce: async (b, op) => w.allReduce(b, op), close: () => w.close() };
}

const g = await open();

async function time(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  await fn(); // warm up
  const flag = new Float32Array(1);
  const t0 = performance.now();
  let iters = 0;
  for (;;) {
    await fn();
    iters++;
    // rank 0 decides when to stop; everyone follows (the flag all-reduce is counted, it is tiny)
    flag[0] = g.rank === 0 && (performance.now() - t0 > budgetMs || iters >= maxIters) ? 1 : 0;
    if ((await g.allReduce(flag, 'max'))[0]! > 0) break;
  }
  return (performance.now() - t0) / iters;
}

for (const n of sizes) {
  const buf = new Float32Array(n).fill(1);
  const ms = await time(() => g.allReduce(buf, 'sum'));
  if (g.rank === 0) {
    const src = new Float32Array(n).fill(1);
    const dst = new Float32Array(n);
    const t0 = performance.now();
    let k = 0;
    while (performance.now() - t0 < 200 || k < 5) {
      dst.set(src);
      k++;
    }
    console.log(`RESULT ${JSON.stringify({ ranks: g.size, bytes: n * 4, ms, memcpyMs: (performance.now() - t0) / k })}`);
  }
}
await g.close();
