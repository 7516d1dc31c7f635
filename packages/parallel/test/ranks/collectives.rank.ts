// Run by test/collectives.test.ts through launch(): every collective on the world and on
// sub-groups, checked against values computed here in closed form. Prints `RESULT <json>`.
import { initProcessGroup } from '../../src/index.js';

const world = await initProcessGroup({
  transport: (process.env.RL2_TEST_TRANSPORT as 'tcp' | 'auto') ?? 'auto',
});
const { rank, size } = world;
const value = (r: number, i: number) => (r + 1) * 0.5 + i * 0.25; // exact in float32
const n = 1003; // not a multiple of the world size: uneven ring chunks
const mine = () => Float32Array.from({ length: n }, (_, i) => value(rank, i));
const failures: string[] = [];
const expect = (name: string, got: ArrayLike<number>, want: (i: number) => number, len = n) => {
  if (got.length !== len) return failures.push(`${name}: length ${got.length} != ${len}`);
  for (let i = 0; i < len; i++) {
    if (Math.abs(got[i]! - want(i)) > 1e-6 * Math.max(1, Math.abs(want(i))))
      return failures.push(`${name}[${i}] = ${got[i]} != ${want(i)}`);
  }
};
const ranks = Array.from({ length: size }, (_, r) => r);
const sum = (i: number) => ranks.reduce((s, r) => s + value(r, i), 0);

expect('allReduce sum', world.allReduce(mine(), 'sum'), sum);
expect('allReduce max', world.allReduce(mine(), 'max'), (i) => value(size - 1, i));
expect('allReduce avg', world.allReduce(mine(), 'avg'), (i) => sum(i) / size);
expect('allGather', world.allGather(mine()), (j) => value(Math.floor(j / n), j % n), n * size);
const rsIn = Float32Array.from({ length: 4 * size }, (_, i) => value(rank, i));
expect('reduceScatter', world.reduceScatter(rsIn, 'sum'), (i) => sum(rank * 4 + i), 4);
const b = rank === 1 % size ? mine() : new Float32Array(n);
expect('broadcast', world.broadcast(b, 1 % size), (i) => value(1 % size, i));
world.barrier();
if (size > 1) {
  const next = (rank + 1) % size;
  const prev = (rank - 1 + size) % size;
  // even ranks send first, odd ranks receive first (blocking calls, like MPI_Send/Recv)
  const got = new Float32Array(n);
  if (rank % 2 === 0) {
    world.send(mine(), next);
    world.recv(got, prev);
  } else {
    world.recv(got, prev);
    world.send(mine(), next);
  }
  expect('send/recv', got, (i) => value(prev, i));
}
// overlapping ops: start an all-gather, compute, then wait
const pending = world.iallGather(Float32Array.of(rank));
expect('iallGather', pending.wait(), (i) => i, size);
// sub-groups: even and odd ranks
if (size >= 4) {
  const members = ranks.filter((r) => r % 2 === rank % 2);
  const g = world.subgroup(members, 'parity');
  expect('subgroup allReduce', g.allReduce(mine()), (i) =>
    members.reduce((s, r) => s + value(r, i), 0),
  );
  expect(
    'subgroup allGather',
    g.allGather(Float32Array.of(rank)),
    (i) => members[i]!,
    members.length,
  );
}
const big = Float32Array.from({ length: 1 << 18 }, (_, i) => (i % 7) + rank);
const bigOut = world.allReduce(big, 'sum');
expect('allReduce 1 MiB', bigOut, (i) => (i % 7) * size + (size * (size - 1)) / 2, 1 << 18);
world.barrier();
const result = {
  rank,
  size,
  failures,
  source: world.env.source,
  collectives: world.collectives,
  nodeRank: world.env.nodeRank,
};
console.log(`RESULT ${JSON.stringify(result)}`);
await world.close();
