import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { reduceFromTensorParallel, shardRange } from './tensor-parallel.js';
import { unaryCustomGrad, valuesOf } from './custom-grad.js';

/** Vocabulary rows [start, end) held by this tp rank (vocab size must divide by tp: pad it). */
export function vocabRange(
  vocabSize: number,
  tp: Pick<ProcessGroup, 'rank' | 'size'>,
): [number, number] {
  return shardRange(
    vocabSize,
    tp.rank,
    tp.size,
    'vocab_size (pad the embedding to a multiple of tp)',
  );
}

/**
 * Vocab-parallel embedding: each rank looks up the ids in its slice of the table (zeros
 * elsewhere) and the slices are summed over tp (g operator), so every rank gets `[N, H]`.
 * `tableShard [V/tp, H]`, `ids [N]` int32 over the full vocabulary.
 */
export function vocabParallelEmbedding(
  ids: tf.Tensor1D,
  tableShard: tf.Tensor2D,
  vocabSize: number,
  tp: ProcessGroup,
): tf.Tensor2D {
  const [start, end] = vocabRange(vocabSize, tp);
  const local = tf.tidy(() => {
    const shifted = tf.sub(tf.cast(ids, 'int32'), tf.scalar(start, 'int32'));
    const inRange = tf.logicalAnd(tf.greaterEqual(ids, start), tf.less(ids, end));
    const safe = tf.where(inRange, shifted, tf.zerosLike(shifted));
    const rows = tf.gather(tableShard, safe);
    return tf.mul(rows, tf.expandDims(tf.cast(inRange, 'float32'), 1));
  });
  return reduceFromTensorParallel(local, tp) as tf.Tensor2D;
}

/**
 * Log-probabilities of `targets` and the entropy of each row's distribution, from logits split
 * over the vocabulary (`logitsShard [N, V/tp]`, this rank's columns), without gathering them:
 * logZ = m + log(sum_r sum_j exp(z_j - m)) with m the global row max (one max all-reduce, one
 * sum all-reduce of [N, 3] partials: sum exp, target logit, sum exp * z);
 * logp = z_target - logZ; entropy = logZ - E_p[z].
 * The gradient is local (no communication): d logp / dz_j = 1[j = target] - p_j and
 * d entropy / dz_j = -p_j (z_j - E_p[z]). Divide logits by the sampling temperature first.
 */
export function vocabParallelLogprobs(
  logitsShard: tf.Tensor2D,
  targets: tf.Tensor1D,
  vocabSize: number,
  tp: ProcessGroup,
): { logprobs: tf.Tensor1D; entropy: tf.Tensor1D } {
  const [start] = vocabRange(vocabSize, tp);
  const [n, width] = logitsShard.shape;
  const tgt = Int32Array.from(targets.dataSync());
  const op = unaryCustomGrad((z) => {
    const zs = valuesOf(z);
    const max = new Float32Array(n).fill(Number.NEGATIVE_INFINITY);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < width; j++) max[i] = Math.max(max[i]!, zs[i * width + j]!);
    tp.allReduce(max, 'max');
    const part = new Float32Array(3 * n); // per row: sum exp(z - m), target logit, sum exp(z - m) * z
    for (let i = 0; i < n; i++) {
      let s = 0;
      let sz = 0;
      for (let j = 0; j < width; j++) {
        const zij = zs[i * width + j]!;
        const e = Math.exp(zij - max[i]!);
        s += e;
        sz += e * zij;
      }
      const local = tgt[i]! - start;
      part[3 * i] = s;
      part[3 * i + 1] = local >= 0 && local < width ? zs[i * width + local]! : 0;
      part[3 * i + 2] = sz;
    }
    tp.allReduce(part, 'sum');
    const logZ = new Float32Array(n);
    const mean = new Float32Array(n); // E_p[z]
    const out = new Float32Array(2 * n); // [logp, entropy] per row
    for (let i = 0; i < n; i++) {
      logZ[i] = max[i]! + Math.log(part[3 * i]!);
      mean[i] = part[3 * i + 2]! / part[3 * i]!;
      out[2 * i] = part[3 * i + 1]! - logZ[i]!;
      out[2 * i + 1] = logZ[i]! - mean[i]!;
    }
    return {
      value: tf.tensor2d(out, [n, 2]),
      gradFunc: (dy) => {
        const g = dy.dataSync();
        const dz = new Float32Array(n * width);
        for (let i = 0; i < n; i++) {
          const local = tgt[i]! - start;
          for (let j = 0; j < width; j++) {
            const zij = zs[i * width + j]!;
            const p = Math.exp(zij - logZ[i]!);
            dz[i * width + j] =
              g[2 * i]! * ((j === local ? 1 : 0) - p) - g[2 * i + 1]! * p * (zij - mean[i]!);
          }
        }
        return tf.tensor2d(dz, [n, width]);
      },
    };
  });
  const both = op(logitsShard) as tf.Tensor2D;
  const [logprobs, entropy] = tf.split(both, 2, 1).map((t) => tf.reshape(t, [n]) as tf.Tensor1D);
  return { logprobs: logprobs!, entropy: entropy! };
}
