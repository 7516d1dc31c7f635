import * as tf from '@tensorflow/tfjs-core';
import type { SamplingRow } from './batch-stepper.js';
import type { SampledToken } from './sample-token.js';

/** One row's sampling parameters as `pickToken` (sample-token.ts) reads them, and its draw. */
interface RowDraw {
  /** The temperature the weights use: T, or 1 for greedy rows. */
  scale: number;
  greedy: boolean;
  /** top-k as a count in 1..V (V: off). */
  topK: number;
  topP: number;
  /** The row's uniform draw in [0, 1) (0 for greedy and skipped rows: no draw is taken). */
  u: number;
}

/** Each row's parameters, taking one draw of its rng where `sampleToken` would (T > 0, not skipped). */
function drawRows(rows: readonly SamplingRow[], v: number): RowDraw[] {
  return rows.map((row) => {
    const t = row.params.temperature ?? 1;
    const k = row.params.topK;
    return {
      scale: t > 0 ? t : 1,
      greedy: t <= 0,
      topK: k !== undefined && k > 0 ? Math.min(k, v) : v,
      topP: row.params.topP ?? 1,
      u: t > 0 && !row.skip ? row.rng.next() : 0,
    };
  });
}

const column = (values: number[], dtype: 'float32' | 'int32' = 'float32') =>
  tf.tensor2d(values, [values.length, 1], dtype);

/** The first column whose running sum exceeds `target` [B, 1]: how many running sums are <= it. */
function inverseCdf(weights: tf.Tensor2D, target: tf.Tensor2D): tf.Tensor2D {
  const cdf = tf.cumsum(weights, 1);
  return tf.sum(tf.cast(tf.lessEqual(cdf, target), 'int32'), 1, true) as tf.Tensor2D;
}

/**
 * top-k then top-p (`pickToken`'s order): the weights sorted in descending order, the k most
 * likely kept, then the shortest prefix whose mass reaches topP of the full sum (at least one
 * token), and a draw of u times the kept mass; returns token ids [B, 1].
 */
function filteredTokens(
  w: tf.Tensor2D,
  sum: tf.Tensor2D,
  draws: RowDraw[],
  filtered: boolean[],
): tf.Tensor2D {
  const v = w.shape[1];
  const width = draws.some((d, i) => filtered[i] && d.topP < 1)
    ? v
    : Math.max(...draws.map((d, i) => (filtered[i] ? d.topK : 1)));
  const { values, indices } = tf.topk(w, width, true);
  const rank = tf.reshape(tf.range(0, width, 1, 'int32'), [1, width]);
  const inTopK = tf.less(
    rank,
    column(
      draws.map((d) => d.topK),
      'int32',
    ),
  );
  const before = tf.sub(tf.cumsum(values, 1), values);
  const inTopP = tf.logicalOr(
    tf.less(before, tf.mul(sum, column(draws.map((d) => d.topP)))),
    tf.equal(rank, 0),
  );
  const keep = tf.logicalAnd(inTopK, inTopP);
  const kept = tf.where(keep, values, tf.zerosLike(values)) as tf.Tensor2D;
  const total = tf.sum(kept, 1, true);
  const count = tf.sum(tf.cast(keep, 'int32'), 1, true);
  const at = tf.minimum(
    inverseCdf(kept, tf.mul(total, column(draws.map((d) => d.u)))),
    tf.sub(count, tf.scalar(1, 'int32')),
  );
  return gatherRows(indices as tf.Tensor2D, at as tf.Tensor2D);
}

/** x[r, at[r]] for each row r: [B, 1] (a flat gather, so no batched-gather support is needed). */
function gatherRows(x: tf.Tensor2D, at: tf.Tensor2D): tf.Tensor2D {
  const [b, v] = x.shape;
  const flat = tf.add(tf.range(0, b * v, v, 'int32'), tf.reshape(at, [b]));
  return tf.reshape(tf.gather(tf.reshape(x, [b * v]), flat), [b, 1]) as tf.Tensor2D;
}

/**
 * Samples every row of `logits` [B, V] on the device with tensor ops, the same choice as
 * `sampleToken` (sample-token.ts): greedy argmax; else the inverse CDF of
 * w = exp((l - max) / T) at u * sum(w) with u the row's next draw, after top-k then top-p
 * when set; each token's log-probability under log_softmax(logits / T) (T = 1 for greedy);
 * with top log-probs, the `topLogprobs` most likely tokens. Returns one tensor [B, 2 + 2n]
 * (token id, logprob, n ids, n logprobs; ids are exact in float32) so a step is one read, and
 * `n`, the most top log-probs any row asked for. Float32 sums: a token within ~1e-7 of a CDF
 * boundary may differ from `sampleToken`'s float64 one.
 */
export function sampleOnDevice(
  logits: tf.Tensor2D,
  rows: readonly SamplingRow[],
): { packed: tf.Tensor2D; n: number } {
  const [b, v] = logits.shape;
  const draws = drawRows(rows, v);
  const n = Math.min(v, Math.max(0, ...rows.map((r) => (r.skip ? 0 : r.topLogprobs))));
  const packed = tf.tidy(() => {
    const max = tf.max(logits, 1, true);
    const z = tf.div(tf.sub(logits, max), column(draws.map((d) => d.scale)));
    const w = tf.exp(z) as tf.Tensor2D;
    const sum = tf.sum(w, 1, true) as tf.Tensor2D;
    const logp = tf.sub(z, tf.log(sum)) as tf.Tensor2D;
    const argmax = tf.reshape(tf.argMax(logits, 1), [b, 1]) as tf.Tensor2D;
    const filtered = draws.map((d) => !d.greedy && (d.topK < v || d.topP < 1));
    const plain = draws.map((d, i) => !d.greedy && !filtered[i]);
    let token = argmax;
    if (plain.some(Boolean)) {
      // past the last running sum (float rounding): the argmax, as `pickToken` falls back to
      const at = inverseCdf(w, tf.mul(sum, column(draws.map((d) => d.u))));
      const sampled = tf.where(tf.less(at, v), at, argmax) as tf.Tensor2D;
      token = tf.where(
        tf.cast(column(plain.map(Number), 'int32'), 'bool'),
        sampled,
        token,
      ) as tf.Tensor2D;
    }
    if (filtered.some(Boolean)) {
      const sampled = filteredTokens(w, sum, draws, filtered);
      token = tf.where(
        tf.cast(column(filtered.map(Number), 'int32'), 'bool'),
        sampled,
        token,
      ) as tf.Tensor2D;
    }
    const parts = [tf.cast(token, 'float32'), gatherRows(logp, token)];
    if (n > 0) {
      const top = tf.topk(logp, n, true);
      parts.push(tf.cast(top.indices, 'float32'), top.values);
    }
    return tf.concat(parts, 1) as tf.Tensor2D;
  });
  return { packed, n };
}

/** The packed rows of `sampleOnDevice` as the generator's tokens (undefined for skipped rows). */
export function unpackSampled(
  values: Float32Array,
  rows: readonly SamplingRow[],
  n: number,
): (SampledToken | undefined)[] {
  const width = 2 + 2 * n;
  return rows.map((row, r) => {
    if (row.skip) return undefined;
    const at = r * width;
    const out: SampledToken = { token: values[at]!, logprob: values[at + 1]! };
    if (row.topLogprobs > 0)
      out.top = Array.from({ length: Math.min(row.topLogprobs, n) }, (_, j) => ({
        id: values[at + 2 + j]!,
        logprob: values[at + 2 + n + j]!,
      }));
    return out;
  });
}
