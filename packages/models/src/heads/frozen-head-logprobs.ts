import * as tf from '@tensorflow/tfjs-core';
import { type FrozenMatrix, frozenInputGrad, frozenLinear, frozenRows } from '@rl2/engine';
import { frozenRowsGather } from '../frozen/frozen-weights.js';
import { logprobEntropy, onlineLogsumexp } from './online-logsumexp.js';

/** Logit elements [N, V] kept from the forward for the backward (256 MiB); above, chunks are recomputed. */
const KEEP_LOGITS = 1 << 26;

/**
 * `chunkedLogprobsEntropy` for a frozen 16-bit LM head W [V, H] (a LoRA base kept as stored):
 * z = h W^T / tau per vocabulary chunk (online logsumexp), [N, 2] = (log p of the targets,
 * entropy), differentiable w.r.t. `hidden` only: dh = dz W chunk by chunk, with
 * dz = -p (g_logp + g_H (logp + H)) / tau and g_logp / tau at the target. The chunks' logits
 * are kept for the backward when N x V is small enough, else recomputed.
 */
export function frozenHeadLogprobs(
  hidden: tf.Tensor2D,
  w: FrozenMatrix,
  targets: Int32Array,
  temperature: number,
  chunkSize: number,
): tf.Tensor2D {
  const [n] = hidden.shape;
  const v = w.shape[0];
  const inv = 1 / temperature;
  const chunks: [number, number][] = [];
  for (let c0 = 0; c0 < v; c0 += chunkSize) chunks.push([c0, Math.min(chunkSize, v - c0)]);
  const keep = n * v <= KEEP_LOGITS;
  const logitsOf = (h: tf.Tensor2D, c0: number, size: number): tf.Tensor2D => {
    const z = frozenLinear(h, frozenRows(w, c0, size));
    return inv === 1 ? z : (tf.mul(z, inv) as tf.Tensor2D);
  };
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
    const keepLogits = (z: tf.Tensor2D) => (keep ? [z] : []);
    const streamed = onlineLogsumexp(n, chunks, (c0, size) => logitsOf(h, c0, size), keepLogits);
    const { kept } = streamed;
    const zy = tf.tidy(() =>
      tf.mul(tf.sum(tf.mul(h, frozenRowsGather(w, targets)), 1), inv),
    ) as tf.Tensor1D; // z[y], [N]
    const [stats, lse] = logprobEntropy(zy, streamed);
    save([h, stats, lse, ...kept]);
    tf.dispose([lse, ...kept]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [hs, st, lseS, ...zs] = saved as tf.Tensor2D[];
        return [headBackward(dy, hs!, st!, lseS!, zs, { w, chunks, targets, inv, logitsOf })];
      },
    };
  });
  return f(hidden) as tf.Tensor2D;
}

interface HeadParts {
  w: FrozenMatrix;
  chunks: [number, number][];
  targets: Int32Array;
  inv: number;
  logitsOf: (h: tf.Tensor2D, c0: number, size: number) => tf.Tensor2D;
}

/** dh [N, H] of the frozen head from dy [N, 2] (g_logp, g_H). */
function headBackward(
  dy: tf.Tensor,
  h: tf.Tensor2D,
  stats: tf.Tensor2D,
  lse: tf.Tensor2D,
  kept: tf.Tensor2D[],
  p: HeadParts,
): tf.Tensor2D {
  const [n] = h.shape;
  return tf.tidy(() => {
    const gLogp = tf.slice(dy, [0, 0], [n, 1]);
    const gEnt = tf.slice(dy, [0, 1], [n, 1]);
    const entropyUsed = tf.any(tf.notEqual(gEnt, 0)).dataSync()[0] === 1;
    const ent = tf.slice(stats, [0, 1], [n, 1]);
    // target term: d z[y] = g_logp / tau times the targets' rows of W
    let dh: tf.Tensor2D = tf.mul(frozenRowsGather(p.w, p.targets), tf.mul(gLogp, p.inv));
    p.chunks.forEach(([c0, size], i) => {
      const next = tf.tidy(() => {
        const z = kept[i] ?? p.logitsOf(h, c0, size);
        const lp = tf.sub(z, lse);
        const coef = entropyUsed ? tf.add(gLogp, tf.mul(gEnt, tf.add(lp, ent))) : gLogp;
        const dz = tf.mul(tf.exp(lp), tf.mul(coef, -p.inv)) as tf.Tensor2D;
        return tf.add(dh, frozenInputGrad(dz, frozenRows(p.w, c0, size))) as tf.Tensor2D;
      });
      dh.dispose();
      dh = next;
    });
    return dh;
  });
}
