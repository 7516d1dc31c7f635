// Run by test/parallel-decoder.test.ts under launch(): one SFT-objective training step
// (token-mean NLL over a packed row of two sequences, gradients, AdamW) on a tiny random
// decoder (FAMILY = qwen3 | llama), once on this process alone and once over the world as
// TP x CP (env TP, CP; world rank = cpRank * TP + tpRank):
// - TP: q/k/v/gate/up column-parallel, o/down row-parallel (shardForTensorParallel +
//   tensorParallelLinearFactory, local head counts from the projections); norms replicated;
//   embedding and LM head replicated, or with VOCAB=1 vocab-parallel (vocabParallelEmbedding as
//   the model's `embedding`, vocabParallelLogprobs over this rank's logits);
// - CP: zigzag split of the row, K/V all-gathered in every attention
//   (contextParallelAttentionKernel; tiled where the backend has flashAttention), per-token
//   log-probs all-gathered for the loss.
// Gradients are summed over cp; q_norm/k_norm (applied per local head) also over tp.
// Prints `RESULT {"rank", "lossRef", "lossPar", "gradErrors": {name: rel}, "weightErrors": {name: rel}}`
// with rel = ||parallel - ref|| / ||ref|| over this rank's shard of each tensor.
import { flashAttention, initEngine } from '@rl2/engine';
import {
  createDecoderModel,
  type DecoderModel,
  initRandomModel,
  type ModelSpec,
  type ParamLookup,
  type ParamMap,
  forwardHidden,
  lmHeadWeight,
  packSequences,
  tokenLogprobs,
  type TokenBatch,
} from '@rl2/models';
import {
  allGatherContext,
  contextParallelAttentionKernel,
  copyToTensorParallel,
  initProcessGroup,
  planZigzag,
  type ProcessGroup,
  shardForTensorParallel,
  tensorParallelHeads,
  tensorParallelLinearFactory,
  tensorParallelRole,
  vocabParallelEmbedding,
  vocabParallelLogprobs,
} from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { AdamW } from '../../src/optim/adamw.js';
import { relTensor } from '../rank-runs.js';

// BACKEND=native: context parallelism's attention runs tiled (flashAttention with query positions)
await initEngine({
  backend: process.env.BACKEND === 'native' ? 'native' : 'cpu',
  threads: 1,
  logger: () => {},
});
const family = (process.env.FAMILY ?? 'qwen3') as ModelSpec['family'];
const spec: ModelSpec = {
  family,
  vocabSize: 40,
  hiddenSize: 16,
  intermediateSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  initializerRange: 0.2,
};

// two sequences (lengths multiples of 2*cp = 4); targets are the next token, the last token of
// each sequence is not scored (mask 0)
const seqs = [
  [1, 5, 9, 13, 17, 21, 25, 29],
  [2, 7, 3, 11, 19, 23, 31, 37, 4, 8, 12, 16],
];
const row = packSequences(seqs);
const targets = seqs.flatMap((s) => s.map((_, i) => s[i + 1] ?? 0));
const mask: number[] = seqs.flatMap((s) => s.map((_, i) => (i + 1 < s.length ? 1 : 0)));
const maskSum = mask.reduce((a, b) => a + b, 0);
const adam = { betas: [0.9, 0.999] as const, eps: 1e-8, weightDecay: 0.01 };
const LR = 1e-2;

/** Loss = -sum(mask * logp) / sum(mask) over the whole row; `logp` [T] in row order. */
const sftLoss = (logp: tf.Tensor1D) =>
  tf.div(tf.neg(tf.sum(tf.mul(logp, tf.tensor1d(mask)))), maskSum) as tf.Scalar;

function step(model: DecoderModel, loss: () => tf.Scalar, reduce: (g: Float32Array) => void) {
  const names = [...model.params.keys()];
  const { value, grads } = tf.variableGrads(
    loss,
    names.map((n) => model.params.get(n)!),
  );
  const out = {
    loss: value.dataSync()[0]!,
    grads: {} as Record<string, Float32Array>,
    weights: {} as Record<string, Float32Array>,
  };
  for (const n of names) {
    const v = model.params.get(n)!;
    const g = Float32Array.from(grads[v.name]!.dataSync());
    reduce(g);
    const p = tf.variable(tf.tensor(v.dataSync(), v.shape)); // the step updates a copy
    new AdamW({ [n]: p }, adam).step({ [n]: tf.tensor(g, v.shape) }, LR);
    out.grads[n] = g;
    out.weights[n] = Float32Array.from(p.dataSync());
  }
  return out;
}

// one process: the whole row through the stock decoder (default attention kernel)
const single = initRandomModel(spec, 11);
const ref = step(
  single,
  () => sftLoss(tokenLogprobs(single, row, targets).logprobs),
  () => {},
);

// TP x CP over the world
const world = await initProcessGroup();
const tpSize = Number(process.env.TP ?? 1);
const cpSize = Number(process.env.CP ?? 1);
if (tpSize * cpSize !== world.size)
  throw new Error(`TP=${tpSize} x CP=${cpSize} != world size ${world.size}`);
const tpRank = world.rank % tpSize;
const cpRank = Math.floor(world.rank / tpSize);
const range = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));
const tp =
  tpSize > 1
    ? world.subgroup(
        range(tpSize, (i) => cpRank * tpSize + i),
        `tp${cpRank}`,
      )
    : undefined;
const cp =
  cpSize > 1
    ? world.subgroup(
        range(cpSize, (j) => j * tpSize + tpRank),
        `cp${tpRank}`,
      )
    : undefined;

const full = initRandomModel(spec, 11);
if (tp) tensorParallelHeads(spec.numHeads, spec.numKvHeads ?? spec.numHeads, tp.size); // kv_heads % tp checked
const toVariables = (m: ReadonlyMap<string, tf.Tensor>): ParamMap =>
  new Map([...m].map(([n, t]) => [n, tf.variable(t, true)]));
/** Megatron shards of q/k/v/o and gate/up/down; embedding and LM head vocab-split with VOCAB=1, else whole (replicated). */
const vocabParallel = process.env.VOCAB === '1';
const shardTp = (m: ReadonlyMap<string, tf.Tensor>, g: ProcessGroup) => {
  const s = shardForTensorParallel(m, g);
  if (!vocabParallel) for (const [n, t] of m) if (tensorParallelRole(n) === 'vocab') s.set(n, t);
  return s;
};
const params = tp ? toVariables(shardTp(full.params, tp)) : full.params;
const plan = planZigzag(row.cuSeqlens, cpSize);
const parModel = createDecoderModel(full.config, params, {
  ...(tp ? { linear: tensorParallelLinearFactory(tp) } : {}),
  ...(cp ? { attention: contextParallelAttentionKernel(plan, cp, flashAttention) } : {}),
  ...(tp && vocabParallel
    ? {
        embedding: (ids: tf.Tensor1D, p: ParamLookup) =>
          vocabParallelEmbedding(
            ids,
            p.get('model.embed_tokens.weight') as tf.Tensor2D,
            spec.vocabSize,
            tp,
          ),
      }
    : {}),
});
/** Per-token log-probs [Tl]: the stock head, or (VOCAB=1) logits of this rank's vocabulary shard and a cross-shard logsumexp. */
const localLogprobs = (): tf.Tensor1D => {
  if (!(tp && vocabParallel)) return tokenLogprobs(parModel, local, localTargets).logprobs;
  const hidden = copyToTensorParallel(forwardHidden(parModel, local), tp); // f: the head's input gradient is summed over tp
  const logits: tf.Tensor2D = tf.matMul(hidden, lmHeadWeight(parModel), false, true); // [Tl, V/tp]
  return vocabParallelLogprobs(logits, tf.tensor1d(localTargets, 'int32'), spec.vocabSize, tp)
    .logprobs;
};
const mine = plan.indices[cpRank]!;
const local: TokenBatch = {
  inputIds: mine.map((p) => row.inputIds[p]!),
  positionIds: mine.map((p) => plan.positions[p]!),
  segmentIds: mine.map((p) => plan.segments[p]!),
};
const localTargets = mine.map((p) => targets[p]!);
const names = [...params.keys()];
let k = 0;
const par = step(
  parModel,
  () => {
    const logp = localLogprobs();
    return sftLoss(cp ? allGatherContext(logp, plan, cp, 'own') : logp);
  },
  (g) => {
    const name = names[k++]!;
    if (cp) cp.allReduce(g, 'sum');
    if (tp && /\.(q_norm|k_norm)\.weight$/.test(name)) tp.allReduce(g, 'sum');
  },
);

// the reference's grads and updated weights, sharded as this rank holds them
const shardOf = (m: Record<string, Float32Array>) => {
  const t = new Map(names.map((n) => [n, tf.tensor(m[n]!, full.params.get(n)!.shape)]));
  const s = tp ? shardTp(t, tp) : t;
  return Object.fromEntries([...s].map(([n, x]) => [n, Float32Array.from(x.dataSync())]));
};
const refGrads = shardOf(ref.grads);
const refWeights = shardOf(ref.weights);

const gradErrors: Record<string, number> = {};
const weightErrors: Record<string, number> = {};
for (const n of names) {
  gradErrors[n] = relTensor(par.grads[n], refGrads[n]!);
  weightErrors[n] = relTensor(par.weights[n], refWeights[n]!);
}
const sharded = names.filter((n) => params.get(n)!.size < full.params.get(n)!.size);
console.log(
  `RESULT ${JSON.stringify({
    rank: world.rank,
    lossRef: ref.loss,
    lossPar: par.loss,
    localTokens: mine.length,
    sharded,
    gradErrors,
    weightErrors,
  })}`,
);
await world.close();
