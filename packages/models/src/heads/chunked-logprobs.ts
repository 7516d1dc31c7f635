import * as tf from '@tensorflow/tfjs-core';
import { hasLogprobStats, logprobStats, logprobStatsGrad } from '@rl2/engine';

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
 */
export function chunkedLogprobsEntropy(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: Int32Array,
  temperature: number,
  chunkSize: number,
): tf.Tensor2D {
  const [n] = hidden.shape;
  const [v, dim] = weight.shape;
  const inv = 1 / temperature;
  const chunks: [number, number][] = [];
  for (let c0 = 0; c0 < v; c0 += chunkSize) chunks.push([c0, Math.min(chunkSize, v - c0)]);
  const single = chunks.length === 1;
  const chunkWeight = (w: tf.Tensor2D, c0: number, size: number) => (single ? w : tf.slice(w, [c0, 0], [size, dim]));
  const logitsOf = (h: tf.Tensor2D, wc: tf.Tensor2D): tf.Tensor2D => {
    const z: tf.Tensor2D = tf.matMul(h, wc, false, true);
    return inv === 1 ? z : (tf.mul(z, inv) as tf.Tensor2D);
  };
  if (single && hasLogprobStats()) return nativeSingleChunk(hidden, weight, targets, inv, logitsOf);
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, w, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
    const outs = tf.tidy(() => {
      let m: tf.Tensor | undefined;
      let s: tf.Tensor = tf.zeros([n]);
      let t: tf.Tensor = tf.zeros([n]);
      let z: tf.Tensor2D | undefined;
      let e: tf.Tensor | undefined;
      for (const [c0, size] of chunks) {
        z = logitsOf(h, chunkWeight(w, c0, size));
        const mc = tf.max(z, 1);
        const mNew = m ? tf.maximum(m, mc) : mc;
        e = tf.exp(tf.sub(z, tf.expandDims(mNew, 1)));
        const scale = m ? tf.exp(tf.sub(m, mNew)) : tf.onesLike(mNew);
        s = tf.add(tf.mul(s, scale), tf.sum(e, 1));
        t = tf.add(tf.mul(t, scale), tf.sum(tf.mul(e, z), 1));
        m = mNew;
      }
      const lse = tf.add(m!, tf.log(s));
      const zy = tf.mul(tf.sum(tf.mul(h, tf.gather(w, tf.tensor1d(targets, 'int32'))), 1), inv); // z[y], [N]
      const stats = tf.stack([tf.sub(zy, lse), tf.sub(lse, tf.div(t, s))], 1) as tf.Tensor2D;
      // one chunk: keep z and p = exp(z - m) / s for the backward instead of recomputing them
      const kept = single ? [z!, tf.div(e!, tf.expandDims(s, 1))] : [];
      return [stats, tf.expandDims(lse, 1), ...kept] as tf.Tensor2D[];
    });
    const [stats, lse, ...kept] = outs as [tf.Tensor2D, tf.Tensor2D, ...tf.Tensor2D[]];
    save([h, w, stats, lse, ...kept]);
    tf.dispose([lse, ...kept]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [hs, ws, st, lseS, z1, p1] = saved as tf.Tensor2D[];
        return tf.tidy(() => {
          const gLogp = tf.slice(dy, [0, 0], [n, 1]);
          const gEnt = tf.slice(dy, [0, 1], [n, 1]);
          const entropyUsed = tf.any(tf.notEqual(gEnt, 0)).dataSync()[0] === 1;
          const ent = tf.slice(st!, [0, 1], [n, 1]);
          const ids = tf.tensor1d(targets, 'int32');
          let dh: tf.Tensor = tf.zeros([n, dim]);
          const dws: tf.Tensor[] = [];
          for (const [c0, size] of chunks) {
            const wc = chunkWeight(ws!, c0, size);
            const z = single ? z1! : logitsOf(hs!, wc);
            const lp = () => tf.sub(z, lseS!);
            const p = single ? p1! : tf.exp(lp());
            // dz (without the target term) = -p * (g_logp + g_H (logp + H)) / tau
            const coef = entropyUsed ? tf.add(gLogp, tf.mul(gEnt, tf.add(lp(), ent))) : gLogp;
            const dz = tf.mul(p, tf.mul(coef, -inv)) as tf.Tensor2D;
            dh = tf.add(dh, tf.matMul(dz, wc));
            dws.push(tf.matMul(dz, hs!, true, false));
          }
          // target term: d z[y] = g_logp / tau
          const gy = tf.mul(gLogp, inv);
          dh = tf.add(dh, tf.mul(gy, tf.gather(ws!, ids)));
          const dwTarget = tf.unsortedSegmentSum(tf.mul(gy, hs!), ids, v);
          const dw = tf.add(dws.length === 1 ? dws[0]! : tf.concat(dws, 0), dwTarget);
          return [dh, dw];
        });
      },
    };
  });
  return f(hidden, weight) as tf.Tensor2D;
}

/**
 * The one-chunk case on the `native` backend: logits z once (kept for the backward), then
 * the fused stats kernel forward and dz kernel backward; dh = dz W, dW = dz^T h.
 */
function nativeSingleChunk(
  hidden: tf.Tensor2D,
  weight: tf.Tensor2D,
  targets: Int32Array,
  inv: number,
  logitsOf: (h: tf.Tensor2D, w: tf.Tensor2D) => tf.Tensor2D,
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
          return [tf.matMul(dz, ws!), tf.matMul(dz, hs!, true, false)];
        });
      },
    };
  });
  return f(hidden, weight) as tf.Tensor2D;
}
