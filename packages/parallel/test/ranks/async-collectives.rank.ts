// Run by test/collectives.test.ts: the Promise-based Collective from createSocketWorld (no worker
// thread), checked against closed-form values. Prints `RESULT <json>`.
import { createSocketWorld, readLaunchEnv } from '../../src/index.js';

const sw = await createSocketWorld(readLaunchEnv());
const g = sw.world;
const failures: string[] = [];
const same = (name: string, got: ArrayLike<number>, want: number[]) => {
  if (JSON.stringify(Array.from(got)) !== JSON.stringify(want))
    failures.push(`${name}: ${JSON.stringify(Array.from(got))} != ${JSON.stringify(want)}`);
};
const r = g.rank;
const ranks = Array.from({ length: g.size }, (_, i) => i);
// several ops in flight at once on one group: sequence numbers keep them apart
const [sum, max, gathered] = await Promise.all([
  g.allReduce(Float32Array.of(r, 2 * r), 'sum'),
  g.allReduce(Float32Array.of(r), 'max'),
  g.allGather(Float32Array.of(r, -r)),
]);
same('allReduce sum', sum, [
  ranks.reduce((a, b) => a + b, 0),
  2 * ranks.reduce((a, b) => a + b, 0),
]);
same('allReduce max', max, [g.size - 1]);
same(
  'allGather',
  gathered,
  ranks.flatMap((i) => [i, -i || 0]),
);
same(
  'reduceScatter',
  await g.reduceScatter(Float32Array.from(ranks.flatMap((i) => [i, 1])), 'avg'),
  [r, 1],
);
same(
  'broadcast',
  await g.broadcast(r === 0 ? Float32Array.of(7, 8) : new Float32Array(2), 0),
  [7, 8],
);
const peer = (r + 1) % g.size;
const from = (r - 1 + g.size) % g.size;
const [, got] = await Promise.all([
  g.send(Float32Array.of(r * 10), peer),
  g.recv(new Float32Array(1), from),
]);
same('send/recv', got, [from * 10]);
await g.barrier();
console.log(`RESULT ${JSON.stringify({ rank: r, failures })}`);
sw.close();
