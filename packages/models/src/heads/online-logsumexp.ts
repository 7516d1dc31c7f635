import * as tf from '@tensorflow/tfjs-core';

/** What `onlineLogsumexp` leaves: per row lse(z) and the softmax-weighted mean sum_j p_j z_j. */
export interface StreamedLogits {
  /** [N] log sum_j exp(z_j). */
  readonly lse: tf.Tensor1D;
  /** [N] sum_j p_j z_j, so the entropy is lse - meanLogit. */
  readonly meanLogit: tf.Tensor1D;
  /** What `keep` returned for each chunk, in chunk order. */
  readonly kept: tf.Tensor2D[];
}

/**
 * Streams the logits z [N, V] chunk by chunk (`logitsOf(c0, size)` gives columns c0 .. c0+size)
 * with an online logsumexp: a running max m, sum s = sum exp(z - m) and t = sum exp(z - m) z,
 * rescaled when m grows (Milakov & Gimelshein 2018, https://arxiv.org/abs/1805.02867). Each
 * chunk runs in its own tidy, so only (m, s, t) and what `keep` returns outlive it (`keep` gets
 * the chunk's z, exp(z - m) and the running sum after it).
 */
export function onlineLogsumexp(
  n: number,
  chunks: readonly (readonly [number, number])[],
  logitsOf: (c0: number, size: number) => tf.Tensor2D,
  keep: (z: tf.Tensor2D, e: tf.Tensor2D, s: tf.Tensor) => tf.Tensor2D[] = () => [],
): StreamedLogits {
  let m: tf.Tensor | undefined;
  let s: tf.Tensor = tf.zeros([n]);
  let t: tf.Tensor = tf.zeros([n]);
  const kept: tf.Tensor2D[] = [];
  for (const [c0, size] of chunks) {
    const next = tf.tidy(() => {
      const z = logitsOf(c0, size);
      const mc = tf.max(z, 1);
      const mNew = m ? tf.maximum(m, mc) : mc;
      const e = tf.exp(tf.sub(z, tf.expandDims(mNew, 1))) as tf.Tensor2D;
      const scale = m ? tf.exp(tf.sub(m, mNew)) : tf.onesLike(mNew);
      const sNew = tf.add(tf.mul(s, scale), tf.sum(e, 1));
      const tNew = tf.add(tf.mul(t, scale), tf.sum(tf.mul(e, z), 1));
      return [mNew, sNew, tNew, ...keep(z, e, sNew)];
    });
    tf.dispose([m, s, t].filter((x): x is tf.Tensor => x !== undefined));
    [m, s, t] = next as [tf.Tensor, tf.Tensor, tf.Tensor];
    kept.push(...(next.slice(3) as tf.Tensor2D[]));
  }
  const [lse, meanLogit] = tf.tidy(() => [tf.add(m!, tf.log(s)), tf.div(t, s)]) as tf.Tensor1D[];
  tf.dispose([m!, s, t]);
  return { lse: lse!, meanLogit: meanLogit!, kept };
}

/**
 * The head's outputs from the targets' logits zy [N] and the streamed stats: [N, 2] = (z[y] - lse,
 * lse - meanLogit), the targets' log-probs and the entropies, and lse as a column [N, 1] for the
 * backward. Consumes zy, `streamed.lse` and `streamed.meanLogit` (not `kept`).
 */
export function logprobEntropy(
  zy: tf.Tensor1D,
  streamed: StreamedLogits,
): [stats: tf.Tensor2D, lseColumn: tf.Tensor2D] {
  const { lse, meanLogit } = streamed;
  const out = tf.tidy(() => [
    tf.stack([tf.sub(zy, lse), tf.sub(lse, meanLogit)], 1) as tf.Tensor2D,
    tf.expandDims(lse, 1) as tf.Tensor2D,
  ]);
  tf.dispose([zy, lse, meanLogit]);
  return out as [tf.Tensor2D, tf.Tensor2D];
}
