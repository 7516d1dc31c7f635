import * as tf from '@tensorflow/tfjs-core';
import { hasLogprobStats, logprobStats, logprobStatsGrad, readsSynchronously } from '@rl2/engine';
import { logprobEntropy, onlineLogsumexp } from './online-logsumexp.js';
import { type TiedEmbeddingGrad, untrackedValues } from './tied-embedding-grad.js';

/**
 * Fused lm_head + log-softmax + entropy with a vocabulary-chunked custom gradient, so neither
 * pass materialises more than [N, chunk] logits:
 *   z = h W^T / tau,  logp_t = z[y_t] - lse(z),  H = lse - sum_j p_j z_j.
 * The forward streams over vocab chunks with an online logsumexp (running max m, sum s and
 * t = sum exp(z - m) z, rescaled when m grows; Milakov & Gimelshein 2018,
 * https://arxiv.org/abs/1805.02867). The backward recomputes each chunk's logits (or reuses
 * them when the vocabulary fits in one chunk) and applies
 *   dz = -p (g_logp + g_H (logp + H)) / tau,  plus g_logp / tau at the target (scattered),
 *   dh = dz W,  dW = dz^T h.
 * The g_H term is skipped when the entropy output receives no gradient.
 * `hidden` [N, H], `weight` [V, H]; returns [N, 2] = (logp, entropy), float32.
 * With `tied` (several chunks, or one on the native backend), dW is also left there for the tied
 * embedding lookup.
 * `weightGrad` false (a frozen head, e.g. LoRA's base): the host backward skips dW ([V, H] and a
 * third of the head's backward) and gives W a placeholder gradient, which the tape drops (W is
 * no input it differentiates).
 */
export function chunkedLogprobsEntropy(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: Int32Array,
  temperature: number,
  chunkSize: number,
  tied?: TiedEmbeddingGrad,
  weightGrad = true,
): tf.Tensor2D {
  const [n] = hidden.shape;
  const [v, dim] = weight.shape;
  const inv = 1 / temperature;
  const chunks: [number, number][] = [];
  for (let c0 = 0; c0 < v; c0 += chunkSize) chunks.push([c0, Math.min(chunkSize, v - c0)]);
  const single = chunks.length === 1;
  const chunkWeight = (w: tf.Tensor2D, c0: number, size: number) =>
    single ? w : tf.slice(w, [c0, 0], [size, dim]);
  const logitsOf = (h: tf.Tensor2D, wc: tf.Tensor2D): tf.Tensor2D => {
    const z: tf.Tensor2D = tf.matMul(h, wc, false, true);
    return inv === 1 ? z : (tf.mul(z, inv) as tf.Tensor2D);
  };
  if (single && hasLogprobStats())
    return nativeSingleChunk(hidden, weight, targets, inv, logitsOf, tied, weightGrad);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, w, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
    // one chunk: keep z and p = exp(z - m) / s for the backward instead of recomputing them
    const keepOne = (z: tf.Tensor2D, e: tf.Tensor2D, s: tf.Tensor): tf.Tensor2D[] =>
      single ? [z, tf.div(e, tf.expandDims(s, 1))] : [];
    const chunkLogits = (c0: number, size: number) => logitsOf(h, chunkWeight(w, c0, size));
    const streamed = onlineLogsumexp(n, chunks, chunkLogits, keepOne);
    const { kept } = streamed;
    const zy = tf.tidy(() =>
      tf.mul(tf.sum(tf.mul(h, tf.gather(w, tf.tensor1d(targets, 'int32'))), 1), inv),
    ) as tf.Tensor1D; // z[y], [N]
    const [stats, lse] = logprobEntropy(zy, streamed);
    save([h, w, stats, lse, ...kept]);
    tf.dispose([lse, ...kept]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [hs, ws, st, lseS, z1, p1] = saved as tf.Tensor2D[];
        if (!readsSynchronously()) {
          const chunkLogits = (c0: number, size: number) =>
            single ? z1! : logitsOf(hs!, chunkWeight(ws!, c0, size));
          return deviceBackward(
            dy,
            { h: hs!, w: ws!, stats: st!, lse: lseS! },
            chunks,
            targets,
            inv,
            chunkLogits,
          );
        }
        const gLogp = tf.slice(dy, [0, 0], [n, 1]);
        const gEnt = tf.slice(dy, [0, 1], [n, 1]);
        const entropyUsed = tf.tidy(() => tf.any(tf.notEqual(gEnt, 0)).dataSync()[0] === 1);
        const ent = tf.slice(st!, [0, 1], [n, 1]);
        // dW [V, H] is filled chunk by chunk in one array (no list of chunks, no concat, no dense scatter)
        const dwValues = new Float32Array(weightGrad ? v * dim : 0);
        let dh: tf.Tensor = tf.zeros([n, dim]);
        for (const [c0, size] of chunks) {
          const next = tf.tidy(() => {
            const wc = chunkWeight(ws!, c0, size);
            const z = single ? z1! : logitsOf(hs!, wc);
            const lp = () => tf.sub(z, lseS!);
            const p = single ? p1! : tf.exp(lp());
            // dz (without the target term) = -p * (g_logp + g_H (logp + H)) / tau
            const coef = entropyUsed ? tf.add(gLogp, tf.mul(gEnt, tf.add(lp(), ent))) : gLogp;
            const dz = tf.mul(p, tf.mul(coef, -inv)) as tf.Tensor2D;
            if (weightGrad) dwValues.set(tf.matMul(dz, hs!, true, false).dataSync(), c0 * dim);
            return tf.add(dh, tf.matMul(dz, wc));
          });
          dh.dispose();
          dh = next;
        }
        // target term: d z[y] = g_logp / tau, scattered into the rows of the targets
        const gy = tf.mul(gLogp, inv);
        if (weightGrad) {
          const hv = hs!.dataSync();
          const gv = gy.dataSync();
          for (let i = 0; i < n; i++) {
            const g = gv[i]!;
            if (g === 0) continue;
            const row = targets[i]! * dim;
            for (let j = 0; j < dim; j++) dwValues[row + j]! += g * hv[i * dim + j]!;
          }
        }
        const dhAll = tf.tidy(() =>
          tf.add(dh, tf.mul(gy, tf.gather(ws!, tf.tensor1d(targets, 'int32')))),
        );
        tf.dispose([dh, gy, gLogp, gEnt, ent]);
        if (!weightGrad) return [dhAll, tf.zeros([1, 1])];
        const dw = tf.tensor2d(dwValues, [v, dim]);
        if (tied) tied.headGrad = { tensor: dw, values: dwValues };
        return [dhAll, dw];
      },
    };
  });
  return f(hidden, weight) as tf.Tensor2D;
}

/**
 * The backward on a device backend (webgpu): nothing is read back. Each chunk's dz holds the
 * target term too (g_logp / tau at the targets that fall in the chunk, as a one-hot), so
 * dh = sum_c dz_c W_c and dW = concat_c dz_c^T h with no scatter on the host; the entropy term
 * is always applied (zero when it gets no gradient).
 */
function deviceBackward(
  dy: tf.Tensor,
  saved: { h: tf.Tensor2D; w: tf.Tensor2D; stats: tf.Tensor2D; lse: tf.Tensor2D },
  chunks: readonly [number, number][],
  targets: Int32Array,
  inv: number,
  chunkLogits: (c0: number, size: number) => tf.Tensor2D,
): tf.Tensor[] {
  const n = targets.length;
  const [gLogp, gEnt, ent] = [
    tf.slice(dy, [0, 0], [n, 1]),
    tf.slice(dy, [0, 1], [n, 1]),
    tf.slice(saved.stats, [0, 1], [n, 1]),
  ];
  const gy = tf.mul(gLogp, inv);
  let dh: tf.Tensor = tf.zeros([n, saved.h.shape[1]]);
  const dwChunks: tf.Tensor[] = [];
  for (const [c0, size] of chunks) {
    const local = Int32Array.from(targets, (t) => (t >= c0 && t < c0 + size ? t - c0 : -1));
    const [next, dw] = tf.tidy(() => {
      const z = chunkLogits(c0, size);
      const lp = tf.sub(z, saved.lse);
      const coef = tf.add(gLogp, tf.mul(gEnt, tf.add(lp, ent)));
      const atTarget = tf.mul(tf.oneHot(tf.tensor1d(local, 'int32'), size), gy);
      const dz = tf.add(tf.mul(tf.exp(lp), tf.mul(coef, -inv)), atTarget) as tf.Tensor2D;
      const wc =
        chunks.length === 1 ? saved.w : tf.slice(saved.w, [c0, 0], [size, saved.w.shape[1]]);
      return [tf.add(dh, tf.matMul(dz, wc)), tf.matMul(dz, saved.h, true, false)];
    });
    dh.dispose();
    dh = next!;
    dwChunks.push(dw!);
  }
  const dw = dwChunks.length === 1 ? dwChunks[0]! : tf.concat(dwChunks, 0);
  if (dwChunks.length > 1) tf.dispose(dwChunks);
  tf.dispose([gLogp, gEnt, ent, gy]);
  return [dh, dw];
}

/**
 * The one-chunk case on the `native` backend: logits z once (kept for the backward), then
 * the fused stats kernel forward and dz kernel backward; dh = dz W, dW = dz^T h (left in `tied`
 * too; skipped when `weightGrad` is false).
 */
function nativeSingleChunk(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: Int32Array,
  inv: number,
  logitsOf: (h: tf.Tensor2D, w: tf.Tensor2D) => tf.Tensor2D,
  tied: TiedEmbeddingGrad | undefined,
  weightGrad: boolean,
): tf.Tensor2D {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, w, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
    const ids = tf.tensor1d(targets, 'int32');
    const z = logitsOf(h, w);
    const [stats, lse] = logprobStats(z, ids);
    save([h, w, z, ids, lse, stats]);
    tf.dispose([ids, z, lse]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [hs, ws, zs, is, ls, ss] = saved as tf.Tensor2D[];
        return tf.tidy(() => {
          const dz = logprobStatsGrad(zs!, is!, ls!, ss!, dy, inv);
          const dh = tf.matMul(dz, ws!);
          if (!weightGrad) return [dh, tf.zeros([1, 1])];
          const dw = tf.matMul(dz, hs!, true, false) as tf.Tensor2D;
          const values = tied ? untrackedValues(dw) : undefined;
          if (tied && values) tied.headGrad = { tensor: dw, values };
          return [dh, dw];
        });
      },
    };
  });
  return f(hidden, weight) as tf.Tensor2D;
}
