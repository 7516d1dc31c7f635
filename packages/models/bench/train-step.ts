// The tiny Llama training step that `pnpm bench models` and `pnpm bench train-profile` time:
// vocab 8192, hidden 256, 4 layers, 4 heads, MLP 768, AdamW through the engine's `adamWUpdate`.
import * as tf from '@tensorflow/tfjs-core';
import { adamWInPlace, freeDisposedBuffers, setProfilePhase } from '@rl2/engine';
import { createDecoderModel, initRandomModel, type ParamMap, tokenLogprobs } from '../src/index.js';
import { groupedQueryAttention } from '../src/layers/attention.js';

export const SPEC = {
  family: 'llama',
  vocabSize: 8192,
  hiddenSize: 256,
  intermediateSize: 768,
  numLayers: 4,
  numHeads: 4,
  tieWordEmbeddings: false,
} as const;

/**
 * AdamW (Loshchilov & Hutter 2019, https://arxiv.org/abs/1711.05101) through the engine's
 * `adamWInPlace` (one fused pass per parameter over its own buffers on native), as the trainers'
 * optimizer runs it.
 */
export function adamW(
  params: ParamMap,
  lr = 1e-4,
  beta1 = 0.9,
  beta2 = 0.999,
  eps = 1e-8,
  weightDecay = 0.01,
) {
  const m = new Map([...params].map(([k, v]) => [k, tf.variable(tf.zerosLike(v), false)]));
  const s = new Map([...params].map(([k, v]) => [k, tf.variable(tf.zerosLike(v), false)]));
  let step = 0;
  return (grads: Record<string, tf.Tensor>) => {
    step += 1;
    for (const [name, p] of params)
      adamWInPlace(p as tf.Variable, grads[p.name]!, m.get(name)!, s.get(name)!, {
        lr,
        beta1,
        beta2,
        eps,
        weightDecay,
        step,
      });
  };
}

export function randomIds(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % SPEC.vocabSize;
  });
}

export interface TrainStepOptions {
  batch: number;
  seq: number;
  recompute?: boolean;
  /** The masked attention path instead of the tiled kernel. */
  unfusedAttention?: boolean;
}

/**
 * A model, a batch of random tokens and AdamW; each call of the returned function runs one
 * training step as the trainers run one (forward, backward, optimizer, loss read back, then the
 * V8 collection that hands the step's buffers back to malloc), naming the phases for a kernel
 * profile (`setProfilePhase`: forward, backward, optimizer, read back, collect). Start the engine
 * with `training: true` first (freed memory kept for reuse, as the trainers do).
 */
export function makeTrainStep(o: TrainStepOptions): () => Promise<number> {
  const random = initRandomModel(SPEC, 0);
  const model = o.unfusedAttention
    ? createDecoderModel(random.config, random.params, {
        attention: (q, k, v, m) => groupedQueryAttention(q, k, v, m),
      })
    : random;
  const ids = randomIds(o.batch * (o.seq + 1), 1);
  const rows = Array.from({ length: o.batch }, (_, r) =>
    ids.slice(r * (o.seq + 1), (r + 1) * (o.seq + 1)),
  );
  const batch = {
    inputIds: rows.flatMap((r) => r.slice(0, o.seq)),
    positionIds: rows.flatMap(() => [...Array(o.seq).keys()]),
    rows: o.batch,
  };
  const targets = rows.flatMap((r) => r.slice(1));
  const params = [...model.params.values()];
  const optimize = adamW(model.params);
  return async () => {
    setProfilePhase('forward');
    const { value, grads } = tf.variableGrads(() => {
      const { logprobs, entropy } = tokenLogprobs(model, batch, targets, {
        recompute: o.recompute,
      });
      entropy.dispose();
      const loss = tf.neg(tf.mean(logprobs)) as tf.Scalar;
      setProfilePhase('backward');
      return loss;
    }, params);
    setProfilePhase('optimizer');
    optimize(grads);
    setProfilePhase('read back');
    const loss = (await value.data())[0]!;
    tf.dispose([value, ...Object.values(grads)]);
    setProfilePhase('collect');
    freeDisposedBuffers();
    setProfilePhase('other');
    return loss;
  };
}
