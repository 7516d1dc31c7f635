import * as tf from '@tensorflow/tfjs-core';

/**
 * Fused lm_head + log-softmax + entropy with a vocabulary-chunked custom gradient, so neither
 * pass materialises more than [N, chunk] logits:
 *   z = h W^T / tau,  logp_t = z[y_t] - lse(z),  H = lse - sum_j p_j z_j.
 * The forward streams over vocab chunks with an online logsumexp (running max m, sum s and
 * t = sum exp(z - m) z, rescaled when m grows; Milakov & Gimelshein 2018,
 * https://arxiv.org/abs/1805.02867). The backward recomputes each chunk:
 *   dz = g_logp (onehot(y) - p) - g_H p (logp + H),  dh = dz W / tau,  dW = dz^T h / tau.
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
  const logitsOf = (h: tf.Tensor2D, w: tf.Tensor2D, c0: number, size: number) => {
    const wc = chunks.length === 1 ? w : tf.slice(w, [c0, 0], [size, dim]);
    return { wc, z: tf.mul(tf.matMul(h, wc, false, true), inv) as tf.Tensor2D };
  };
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, w, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
    const stats = tf.tidy(() => {
      let m: tf.Tensor | undefined;
      let s: tf.Tensor = tf.zeros([n]);
      let t: tf.Tensor = tf.zeros([n]);
      for (const [c0, size] of chunks) {
        const { z } = logitsOf(h as tf.Tensor2D, w as tf.Tensor2D, c0, size);
        const mc = tf.max(z, 1);
        const mNew = m ? tf.maximum(m, mc) : mc;
        const e = tf.exp(tf.sub(z, tf.expandDims(mNew, 1)));
        const scale = m ? tf.exp(tf.sub(m, mNew)) : tf.onesLike(mNew);
        s = tf.add(tf.mul(s, scale), tf.sum(e, 1));
        t = tf.add(tf.mul(t, scale), tf.sum(tf.mul(e, z), 1));
        m = mNew;
      }
      const lse = tf.add(m!, tf.log(s));
      const ids = tf.tensor1d(targets, 'int32');
      const zy = tf.mul(tf.sum(tf.mul(h, tf.gather(w, ids)), 1), inv);
      return tf.stack([tf.sub(zy, lse), tf.sub(lse, tf.div(t, s))], 1) as tf.Tensor2D;
    });
    save([h, w, stats]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [hs, ws, stats] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
        return tf.tidy(() => {
          // recompute lse and entropy from the forward result: lse = z_y - logp
          const ids = tf.tensor1d(targets, 'int32');
          const zy = tf.mul(tf.sum(tf.mul(hs, tf.gather(ws, ids)), 1), inv);
          const logp = tf.squeeze(tf.slice(stats, [0, 0], [n, 1]), [1]);
          const ent = tf.expandDims(tf.squeeze(tf.slice(stats, [0, 1], [n, 1]), [1]), 1);
          const lse = tf.expandDims(tf.sub(zy, logp), 1);
          const gLogp = tf.slice(dy, [0, 0], [n, 1]);
          const gEnt = tf.slice(dy, [0, 1], [n, 1]);
          let dh: tf.Tensor2D = tf.zeros([n, dim]);
          const dws: tf.Tensor2D[] = [];
          for (const [c0, size] of chunks) {
            const { wc, z } = logitsOf(hs, ws, c0, size);
            const lp = tf.sub(z, lse);
            const p = tf.exp(lp);
            const onehot = tf.oneHot(tf.tensor1d(targets.map((y) => y - c0), 'int32'), size, 1, 0, 'float32');
            const dz = tf.mul(
              tf.sub(tf.mul(gLogp, tf.sub(onehot, p)), tf.mul(gEnt, tf.mul(p, tf.add(lp, ent)))),
              inv,
            ) as tf.Tensor2D;
            dh = tf.add(dh, tf.matMul(dz, wc));
            dws.push(tf.matMul(dz, hs, true, false));
          }
          return [dh, dws.length === 1 ? dws[0]! : tf.concat(dws, 0)];
        });
      },
    };
  });
  return f(hidden, weight) as tf.Tensor2D;
}
