// One rank of `pnpm bench parallel`: times blocking all-reduces (the path training uses: the
// compute thread waits on Atomics while the worker thread moves the bytes) and, on rank 0, a
// memcpy of the same size. Prints `RESULT <json>` lines on rank 0.
import { initProcessGroup } from '../src/index.js';

const sizes = (process.env.BENCH_SIZES ?? '1024,65536,1048576,8388608').split(',').map(Number); // float32 values
const world = await initProcessGroup({ transport: process.env.BENCH_TRANSPORT as 'auto' | 'tcp' });

function time(fn: () => void, budgetMs: number, maxIters: number): number {
  fn();
  fn(); // warm up
  world.barrier();
  const t0 = performance.now();
  let iters = 0;
  // ranks agree on the iteration count: rank 0 decides, everyone follows
  const flag = new Float32Array(1);
  for (;;) {
    fn();
    iters++;
    flag[0] = world.rank === 0 && (performance.now() - t0 > budgetMs || iters >= maxIters) ? 1 : 0;
    if (world.allReduce(flag, 'max')[0]! > 0) break;
  }
  return (performance.now() - t0) / iters;
}

for (const n of sizes) {
  const buf = new Float32Array(n).fill(1);
  const ms = time(() => world.allReduce(buf, 'sum'), 1500, 50);
  const src = new Float32Array(n).fill(1);
  const dst = new Float32Array(n);
  let memcpyMs = 0;
  if (world.rank === 0) {
    const t0 = performance.now();
    let k = 0;
    while (performance.now() - t0 < 200 || k < 5) {
      dst.set(src);
      k++;
    }
    memcpyMs = (performance.now() - t0) / k;
    console.log(`RESULT ${JSON.stringify({ ranks: world.size, bytes: n * 4, ms, memcpyMs })}`);
  }
}
world.barrier();
await world.close();
