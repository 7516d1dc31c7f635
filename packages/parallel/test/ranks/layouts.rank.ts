// Run by test/layouts.test.ts through launch() on 2 or 4 ranks. Each case computes a sharded
// result across the ranks and compares it with (a) the torch reference in fixtures/ and (b) the
// same code run single-process here (LocalProcessGroup). Prints `RESULT <json>` with the errors.
import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs'; // registers tfjs's gradient functions (tfjs-core's Node build has none)
import * as tf from '@tensorflow/tfjs-core';
import {
  LocalProcessGroup,
  type ProcessGroup,
  columnParallelLinear,
  contextParallelAttention,
  contextParallelAttentionKernel,
  createMeshGroups,
  initProcessGroup,
  planDeviceMesh,
  planZigzag,
  rowParallelLinear,
  shardForTensorParallel,
  shardLinear,
  splitSequence,
  tensorParallelLinearFactory,
  vocabParallelEmbedding,
  vocabParallelLogprobs,
  vocabRange,
  zigzagSplit,
} from '../../src/index.js';
import { fixture, relErr, tensor } from '../fixture.js';

await tf.setBackend('cpu');
const world = await initProcessGroup();
const local = new LocalProcessGroup();
const errors: { case: string; what: string; vsTorch: number; vsSingle?: number }[] = [];
const record = (
  c: string,
  what: string,
  got: tf.Tensor | ArrayLike<number>,
  torchRef: tf.Tensor | ArrayLike<number>,
  single?: tf.Tensor | ArrayLike<number>,
) =>
  errors.push({
    case: c,
    what,
    vsTorch: relErr(got, torchRef),
    vsSingle: single === undefined ? undefined : relErr(got, single),
  });

/** Tensor-parallel MLP: tanh(x W1^T + b1) W2^T + b2, W1 column- and W2 row-parallel. */
function tpMlp(tp: ProcessGroup, caseName: string) {
  const f = fixture('tp_mlp.json');
  const [x, w1, b1, w2, b2, c] = ['x', 'w1', 'b1', 'w2', 'b2', 'c'].map((k) => tensor(f[k]));
  const run = (g: ProcessGroup) => {
    const col = shardLinear(w1 as tf.Tensor2D, 'column', g, b1 as tf.Tensor1D);
    const row = shardLinear(w2 as tf.Tensor2D, 'row', g, b2 as tf.Tensor1D);
    const loss = (xx: tf.Tensor, a: tf.Tensor, ab: tf.Tensor, b: tf.Tensor, bb: tf.Tensor) => {
      const h = tf.tanh(columnParallelLinear(xx, a as tf.Tensor2D, ab as tf.Tensor1D, g));
      return tf.sum(
        tf.mul(rowParallelLinear(h, b as tf.Tensor2D, bb as tf.Tensor1D, g), c!),
      ) as tf.Scalar;
    };
    const { value, grads } = tf.valueAndGrads(loss)([
      x!,
      col.weight,
      col.bias!,
      row.weight,
      row.bias!,
    ]);
    return { value, grads, col, row };
  };
  const sharded = run(tp);
  const single = run(local);
  const outRows = (w1 as tf.Tensor2D).shape[0] / tp.size;
  const own = (t: tf.Tensor, axis: 0 | 1) =>
    tf.slice(
      t,
      axis === 0 ? [tp.rank * outRows, 0] : [0, tp.rank * outRows],
      axis === 0 ? [outRows, -1] : [-1, outRows],
    );
  record(caseName, 'loss', [sharded.value.dataSync()[0]!], [f.loss], [single.value.dataSync()[0]!]);
  record(caseName, 'dx', sharded.grads[0]!, tensor(f.dx), single.grads[0]!);
  record(
    caseName,
    'dW1 (column shard)',
    sharded.grads[1]!,
    own(tensor(f.dw1), 0),
    own(single.grads[1]!, 0),
  );
  record(
    caseName,
    'db1 (column shard)',
    sharded.grads[2]!,
    tf.slice(tensor(f.db1), [tp.rank * outRows], [outRows]),
    tf.slice(single.grads[2]!, [tp.rank * outRows], [outRows]),
  );
  record(
    caseName,
    'dW2 (row shard)',
    sharded.grads[3]!,
    own(tensor(f.dw2), 1),
    own(single.grads[3]!, 1),
  );
  record(caseName, 'db2', sharded.grads[4]!, tensor(f.db2), single.grads[4]!);
}

/** The same MLP with sequence parallelism: tokens split over tp outside the two linears. */
function tpMlpSequenceParallel(tp: ProcessGroup, caseName: string) {
  const f = fixture('tp_mlp.json');
  const [x, w1, b1, w2, b2, c] = ['x', 'w1', 'b1', 'w2', 'b2', 'c'].map((k) => tensor(f[k]));
  const run = (g: ProcessGroup) => {
    const col = shardLinear(w1 as tf.Tensor2D, 'column', g, b1 as tf.Tensor1D);
    const row = shardLinear(w2 as tf.Tensor2D, 'row', g, b2 as tf.Tensor1D);
    const sp = { sequenceParallel: true };
    const loss = (xx: tf.Tensor, a: tf.Tensor, ab: tf.Tensor, b: tf.Tensor, bb: tf.Tensor) => {
      const h = tf.tanh(columnParallelLinear(xx, a as tf.Tensor2D, ab as tf.Tensor1D, g, sp));
      return tf.sum(
        tf.mul(
          rowParallelLinear(h, b as tf.Tensor2D, bb as tf.Tensor1D, g, sp),
          splitSequence(c!, g),
        ),
      ) as tf.Scalar;
    };
    const { value, grads } = tf.valueAndGrads(loss)([
      splitSequence(x!, g),
      col.weight,
      col.bias!,
      row.weight,
      row.bias!,
    ]);
    // the loss and the row bias' gradient are partial per tp rank under sequence parallelism
    const total = g.allReduce(Float32Array.of(value.dataSync()[0]!), 'sum')[0]!;
    const db2 = tf.tensor(g.allReduce(Float32Array.from(grads[4]!.dataSync()), 'sum'));
    return { total, grads, db2 };
  };
  const sh = run(tp);
  const si = run(local);
  const outRows = (w1 as tf.Tensor2D).shape[0] / tp.size;
  const own = (t: tf.Tensor, axis: 0 | 1) =>
    tf.slice(
      t,
      axis === 0 ? [tp.rank * outRows, 0] : [0, tp.rank * outRows],
      axis === 0 ? [outRows, -1] : [-1, outRows],
    );
  record(caseName, 'loss', [sh.total], [f.loss], [si.total]);
  record(
    caseName,
    'dx (token shard)',
    sh.grads[0]!,
    splitSequence(tensor(f.dx), tp),
    splitSequence(si.grads[0]!, tp),
  );
  record(caseName, 'dW1 (column shard)', sh.grads[1]!, own(tensor(f.dw1), 0), own(si.grads[1]!, 0));
  record(caseName, 'dW2 (row shard)', sh.grads[3]!, own(tensor(f.dw2), 1), own(si.grads[3]!, 1));
  record(caseName, 'db2 (summed over tp)', sh.db2, tensor(f.db2), si.db2);
}

/** The same MLP through the model-facing seam: HF names, shardForTensorParallel + the linear factory. */
function tpFactory(tp: ProcessGroup, caseName: string) {
  const f = fixture('tp_mlp.json');
  const full = new Map<string, tf.Tensor>([
    ['model.layers.0.mlp.up_proj.weight', tensor(f.w1)],
    ['model.layers.0.mlp.up_proj.bias', tensor(f.b1)],
    ['model.layers.0.mlp.down_proj.weight', tensor(f.w2)],
    ['model.layers.0.mlp.down_proj.bias', tensor(f.b2)],
  ]);
  const run = (g: ProcessGroup) => {
    const params = shardForTensorParallel(full, g);
    const linear = tensorParallelLinearFactory(g);
    const up = linear('model.layers.0.mlp.up_proj', params);
    const down = linear('model.layers.0.mlp.down_proj', params);
    return down.forward(tf.tanh(up.forward(tensor(f.x) as tf.Tensor2D)) as tf.Tensor2D);
  };
  record(caseName, 'linear factory output', run(tp), tensor(f.y), run(local));
}

/** Vocab-parallel logprobs + entropy and embedding over the tp group. */
function vocab(tp: ProcessGroup, caseName: string) {
  const f = fixture('vocab_logprobs.json');
  const logits = tensor(f.logits) as tf.Tensor2D;
  const V = logits.shape[1];
  const targets = tf.tensor1d(f.targets, 'int32');
  const [a, b] = [tensor(f.a), tensor(f.b)];
  const run = (g: ProcessGroup) => {
    const [s, e] = vocabRange(V, g);
    const shard = tf.slice(logits, [0, s], [-1, e - s]);
    const lossOf = (z: tf.Tensor) => {
      const r = vocabParallelLogprobs(z as tf.Tensor2D, targets, V, g);
      return tf.sum(tf.add(tf.mul(a!, r.logprobs), tf.mul(b!, r.entropy))) as tf.Scalar;
    };
    const r = vocabParallelLogprobs(shard, targets, V, g);
    return { ...r, dz: tf.grad(lossOf)(shard), s, e };
  };
  const sh = run(tp);
  const si = run(local);
  record(caseName, 'logprobs', sh.logprobs, tensor(f.logprobs), si.logprobs);
  record(caseName, 'entropy', sh.entropy, tensor(f.entropy), si.entropy);
  const cols = (t: tf.Tensor) => tf.slice(t, [0, sh.s], [-1, sh.e - sh.s]);
  record(caseName, 'dlogits (vocab shard)', sh.dz, cols(tensor(f.dlogits)), cols(si.dz));

  const fe = fixture('vocab_embedding.json');
  const table = tensor(fe.table) as tf.Tensor2D;
  const ids = tf.tensor1d(fe.ids, 'int32');
  const g = tensor(fe.g);
  const emb = (grp: ProcessGroup) => {
    const [s, e] = vocabRange(V, grp);
    const shard = tf.slice(table, [s, 0], [e - s, -1]);
    const out = vocabParallelEmbedding(ids, shard, V, grp);
    const d = tf.grad(
      (t: tf.Tensor) =>
        tf.sum(tf.mul(vocabParallelEmbedding(ids, t as tf.Tensor2D, V, grp), g)) as tf.Scalar,
    )(shard);
    return { out, d, s, e };
  };
  const eSh = emb(tp);
  const eSi = emb(local);
  record(caseName, 'embedding', eSh.out, tensor(fe.out), eSi.out);
  const shardRows = (t: tf.Tensor) => tf.slice(t, [eSh.s, 0], [eSh.e - eSh.s, -1]);
  record(caseName, 'dtable (vocab shard)', eSh.d, shardRows(tensor(fe.dtable)), shardRows(eSi.d));
}

/** Attention over a zigzag-split packed row (cp group), heads split over the tp group. */
function attention(cp: ProcessGroup, tp: ProcessGroup, caseName: string) {
  const f = fixture('cp_attention.json');
  const [q, k, v, g] = ['q', 'k', 'v', 'g'].map((n) => tensor(f[n]) as tf.Tensor3D);
  const heads = (t: tf.Tensor3D, grp: ProcessGroup) => {
    const h = t.shape[1] / grp.size;
    return tf.slice(t, [0, grp.rank * h, 0], [-1, h, -1]) as tf.Tensor3D;
  };
  const run = (cg: ProcessGroup, tg: ProcessGroup) => {
    const plan = planZigzag(f.cu_seqlens, cg.size);
    const mine = (t: tf.Tensor3D) => zigzagSplit(heads(t, tg), plan, cg.rank);
    const [ql, kl, vl, gl] = [q!, k!, v!, g!].map(mine) as tf.Tensor3D[];
    const out = contextParallelAttention(ql!, kl!, vl!, plan, cg);
    const lossOf = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) =>
      tf.sum(
        tf.mul(
          contextParallelAttention(a as tf.Tensor3D, b as tf.Tensor3D, c as tf.Tensor3D, plan, cg),
          gl!,
        ),
      ) as tf.Scalar;
    const [dq, dk, dv] = tf.grads(lossOf)([ql!, kl!, vl!]);
    return { out, dq, dk, dv, plan };
  };
  const sh = run(cp, tp);
  const si = run(local, local); // whole row, all heads
  const expectMine = (t: tf.Tensor3D) => zigzagSplit(heads(t, tp), sh.plan, cp.rank);
  record(caseName, 'out', sh.out, expectMine(tensor(f.out) as tf.Tensor3D), expectMine(si.out));
  record(
    caseName,
    'dq',
    sh.dq!,
    expectMine(tensor(f.dq) as tf.Tensor3D),
    expectMine(si.dq as tf.Tensor3D),
  );
  record(
    caseName,
    'dk',
    sh.dk!,
    expectMine(tensor(f.dk) as tf.Tensor3D),
    expectMine(si.dk as tf.Tensor3D),
  );
  record(
    caseName,
    'dv',
    sh.dv!,
    expectMine(tensor(f.dv) as tf.Tensor3D),
    expectMine(si.dv as tf.Tensor3D),
  );
  if (cp.size === 2 && tp.size === 1)
    record(caseName, 'zigzag indices', sh.plan.indices[cp.rank]!, f.zigzag2[cp.rank]);
  // the model-facing kernel: q [1, Tl, Hq, D], k/v [1, Hkv, Tl, D] -> [Tl, Hq*D]
  const kernel = contextParallelAttentionKernel(sh.plan, cp);
  const mine = (t: tf.Tensor3D) => zigzagSplit(heads(t, tp), sh.plan, cp.rank);
  const asKv = (t: tf.Tensor3D) =>
    tf.expandDims(tf.transpose(mine(t), [1, 0, 2]), 0) as tf.Tensor4D;
  const viaKernel = kernel(tf.expandDims(mine(q!), 0) as tf.Tensor4D, asKv(k!), asKv(v!));
  record(
    caseName,
    'model attention kernel',
    viaKernel,
    tf.reshape(expectMine(tensor(f.out) as tf.Tensor3D), viaKernel.shape),
  );
}

const cases = (process.env.LAYOUT_CASES ?? '').split(',');
const W = world.size;
if (cases.includes('tp')) {
  tpMlp(world, `TP(${W})`);
  tpFactory(world, `TP(${W}) model seam`);
  tpMlpSequenceParallel(world, `TP(${W}) sequence parallel`);
  vocab(world, `TP(${W}) vocab`);
}
if (cases.includes('cp')) attention(world, local, `CP(${W})`);
if (cases.includes('tpxcp')) {
  const mesh = planDeviceMesh(W, world.rank, { tp: 2, cp: 2 });
  const g = createMeshGroups(world, mesh);
  attention(g.cp, g.tp, 'TP x CP (2x2)');
  tpMlp(g.tp, 'TP(2) inside a 4-rank world');
}
world.barrier();
console.log(
  `RESULT ${JSON.stringify({ rank: world.rank, collectives: world.collectives, errors })}`,
);
await world.close();
