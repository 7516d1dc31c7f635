// Run by test/zero3.test.ts through launch() on 2 ranks (FSDP(2)) or 4 (ddp 2 x fsdp 2).
// A three-unit toy model under Zero3Params against the same maths on full tensors, here:
// every rank's loss on its own input, gradients of the sum over ranks. Prints
// `RESULT {"rank", "shardFloats", "totalFloats", "errors": {what: rel}}`.
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs'; // registers tfjs's gradient functions (tfjs-core's Node build has none)
import * as tf from '@tensorflow/tfjs-core';
import {
  createMeshGroups,
  initProcessGroup,
  planDeviceMesh,
  Zero3Params,
} from '../../src/index.js';
import { relErr } from '../fixture.js';

await tf.setBackend('cpu');
const world = await initProcessGroup();
const ddp = Number(process.env.DDP ?? 1);
const groups = createMeshGroups(world, planDeviceMesh(world.size, world.rank, { ddp }));

let seed = 7;
const next = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31 - 0.5;
};
const rand = (shape: number[]) =>
  tf.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, next), shape);
const full = new Map<string, tf.Tensor>([
  ['a.w', rand([5, 3])],
  ['a.b', rand([5])],
  ['b.w', rand([4, 5])],
  ['c.w', rand([2, 4])],
]);
const inputOf = (rank: number) =>
  tf.tensor2d(
    Array.from({ length: 6 }, (_, i) => Math.sin(rank * 10 + i)),
    [2, 3],
  );
/** The toy model's loss on one rank's input, reading parameters from `p`. */
const loss = (p: ReadonlyMap<string, tf.Tensor>, x: tf.Tensor2D) => {
  const h = tf.tanh(tf.add(tf.matMul(x, p.get('a.w') as tf.Tensor2D, false, true), p.get('a.b')!));
  const g = tf.tanh(tf.matMul(h, p.get('b.w') as tf.Tensor2D, false, true));
  return tf.sum(tf.square(tf.matMul(g, p.get('c.w') as tf.Tensor2D, false, true))) as tf.Scalar;
};

const zero3 = Zero3Params.fromFull(
  full,
  { fsdp: groups.fsdp, ddp: groups.ddp },
  (n) => n.split('.')[0]!,
);
const errors: Record<string, number> = {};
// the reference: full gradients of the sum of every rank's loss
const names = [...full.keys()];
const ref = tf.grads(
  (...ts: tf.Tensor[]) =>
    tf.addN(
      Array.from({ length: world.size }, (_, r) =>
        loss(new Map(names.map((n, i) => [n, ts[i]!])), inputOf(r)),
      ),
    ) as tf.Scalar,
)(names.map((n) => full.get(n)!));
const refByName = new Map(names.map((n, i) => [n, ref[i]!]));
// two passes (gradients accumulate), as two micro-batches would
const shards = zero3.shards;
let summed: Record<string, tf.Tensor> = {};
for (let pass = 0; pass < 2; pass++) {
  const { grads } = tf.variableGrads(
    () => tf.mul(loss(zero3.passLookup(), inputOf(world.rank)), 0.5) as tf.Scalar,
    Object.values(shards),
  );
  const byUnit = Object.fromEntries(Object.entries(shards).map(([u, v]) => [u, grads[v.name]!]));
  summed =
    Object.keys(byUnit).length && Object.keys(summed).length
      ? Object.fromEntries(Object.entries(byUnit).map(([u, g]) => [u, tf.add(g, summed[u]!)]))
      : byUnit;
}
// this rank's shard of the reference, per unit
for (const u of zero3.units) {
  const want = zero3.shardValues(
    Object.fromEntries(
      u.layout.names.map((n) => [n, Float32Array.from(refByName.get(n)!.dataSync())]),
    ),
  )[u.name]!;
  errors[`grad shard ${u.name}`] = relErr(summed[u.name]!, want);
}
const refNorm = Math.sqrt(ref.reduce((s, g) => s + tf.sum(tf.square(g)).dataSync()[0]!, 0));
errors['global grad norm'] = Math.abs((await zero3.gradNorm(summed)) - refNorm) / refNorm;
const gathered = zero3.gatherAll();
for (const n of names) errors[`gatherAll ${n}`] = relErr(gathered.get(n)!, full.get(n)!);
const moments = zero3.gatherShardValues(
  Object.fromEntries(zero3.units.map((u) => [u.name, Float32Array.from(u.shard.dataSync())])),
);
for (const n of names) errors[`gatherShardValues ${n}`] = relErr(moments[n]!.data, full.get(n)!);
// after the shards change, a pass sees the new values: reading unit a starts gathering unit b
// with the old values; that prefetch is stale once the shards change and must be dropped
tf.tidy(() => zero3.passLookup().get('a.w'));
for (const u of zero3.units) u.shard.assign(tf.mul(u.shard, 2));
zero3.invalidate();
const doubled = tf.tidy(() => loss(zero3.passLookup(), inputOf(0)).dataSync()[0]!);
const want = tf.tidy(
  () => loss(new Map(names.map((n) => [n, tf.mul(full.get(n)!, 2)])), inputOf(0)).dataSync()[0]!,
);
errors['loss after the shards changed'] = Math.abs(doubled - want) / Math.abs(want);
const shardFloats = zero3.units.reduce((s, u) => s + u.shard.size, 0);
const totalFloats = names.reduce((s, n) => s + full.get(n)!.size, 0);
const result = {
  rank: world.rank,
  collectives: world.collectives,
  shardFloats,
  totalFloats,
  fsdp: groups.fsdp.size,
  errors,
};
console.log(`RESULT ${JSON.stringify(result)}`);
await world.close();
