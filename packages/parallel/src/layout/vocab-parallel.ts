import { readValuesNow } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { reduceFromTensorParallel, shardRange } from './tensor-parallel.js';
import { valuesOf } from './custom-grad.js';

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
 * The [N, V/tp] work runs as tensor ops on the active backend (a GPU's on webgpu); only the
 * [N] maxima and the [N, 3] partials cross to the host for the collectives.
 */
export function vocabParallelLogprobs(
  logitsShard: tf.Tensor2D,
  targets: tf.Tensor1D,
  vocabSize: number,
  tp: ProcessGroup,
): { logprobs: tf.Tensor1D; entropy: tf.Tensor1D } {
  const [start] = vocabRange(vocabSize, tp);
  const [n, width] = logitsShard.shape;
  const tgt = Int32Array.from(readValuesNow(targets));
  /** [N, V/tp]: 1 at each row's target column when this rank holds it. */
  const targetMask = () => {
    const local = Int32Array.from(tgt, (t) =>
      t - start >= 0 && t - start < width ? t - start : -1,
    );
    return tf.oneHot(tf.tensor1d(local, 'int32'), width, 1, 0, 'float32');
  };
  const op = tf.customGrad(((z: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const max = valuesFreed(tf.max(z, 1));
    tp.allReduce(max, 'max');
    // per row: sum exp(z - m), target logit, sum exp(z - m) * z
    const part = valuesFreed(
      tf.tidy(() => {
        const e = tf.exp(tf.sub(z, tf.tensor2d(max, [n, 1])));
        const target = tf.sum(tf.mul(z, targetMask()), 1);
        return tf.stack([tf.sum(e, 1), target, tf.sum(tf.mul(e, z), 1)], 1);
      }),
    );
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
    save([z]);
    return {
      value: tf.tensor2d(out, [n, 2]),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const zs = saved[0]!;
          const p = tf.exp(tf.sub(zs, tf.tensor2d(logZ, [n, 1])));
          const [gLogp, gEntropy] = tf.split(dy, 2, 1);
          const dLogp = tf.mul(gLogp!, tf.sub(targetMask(), p));
          const dEntropy = tf.mul(gEntropy!, tf.mul(p, tf.sub(zs, tf.tensor2d(mean, [n, 1]))));
          return tf.sub(dLogp, dEntropy);
        }),
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  const both = op(logitsShard) as tf.Tensor2D;
  const [logprobs, entropy] = tf.split(both, 2, 1).map((t) => tf.reshape(t, [n]) as tf.Tensor1D);
  return { logprobs: logprobs!, entropy: entropy! };
}

/** A copy of `t`'s values on the host; `t` is disposed. */
function valuesFreed(t: tf.Tensor): Float32Array {
  const values = valuesOf(t);
  t.dispose();
  return values;
}
