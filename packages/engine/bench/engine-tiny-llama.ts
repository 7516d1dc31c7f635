// A minimal Llama block stack for the engine benchmark only (the real models live in @rl2/models):
// RMSNorm, rotary attention with a causal mask, SwiGLU MLP, untied LM head, cross-entropy, Adam.
// Written with plain @tensorflow/tfjs-core ops, as models are, so it exercises the kernels a
// real training step uses.
import * as tf from '@tensorflow/tfjs-core';
import { softmaxCrossEntropy } from '../src/index.js';

export interface TinyLlamaConfig {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  mlp: number;
}
export const TINY_LLAMA: TinyLlamaConfig = {
  vocab: 8192,
  hidden: 256,
  layers: 4,
  heads: 4,
  mlp: 768,
};

/** tokensPerSecond from the fastest timed step (the machine is shared); secondsPerStep is the mean. */
export interface StepResult {
  tokensPerSecond: number;
  secondsPerStep: number;
  bestSecondsPerStep: number;
  losses: number[];
  params: number;
  peakRssMiB: number;
}

function rmsNorm(x: tf.Tensor, g: tf.Tensor): tf.Tensor {
  // x / sqrt(mean(x^2) + eps) * g  (Zhang & Sennrich 2019, https://arxiv.org/abs/1910.07467)
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-6))), g);
}

/** Rotary embedding (https://arxiv.org/abs/2104.09864), rotate-half form, x [B, heads, T, d]. */
function rotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  const d = x.shape[3] as number;
  const [x1, x2] = tf.split(x, [d / 2, d / 2], 3);
  return tf.add(tf.mul(x, cos), tf.mul(tf.concat([tf.neg(x2), x1], 3), sin));
}

/** Runs `steps` timed Adam steps (after one warm-up) on random tokens [batch, seq]. */
export async function tinyLlamaStep(opts: {
  batch: number;
  seq: number;
  steps: number;
  config?: TinyLlamaConfig;
  compositeLoss?: boolean;
}): Promise<StepResult> {
  const { vocab: V, hidden: H, layers: L, heads: NH, mlp: F } = opts.config ?? TINY_LLAMA;
  const { batch: B, seq: T } = opts;
  const hd = H / NH;
  const init = (shape: number[], std: number) =>
    tf.variable(tf.mul(tf.randomNormal(shape, 0, 1, 'float32', 7), std));
  const ones = (n: number) => tf.variable(tf.ones([n]));
  const params: tf.Variable[] = [];
  const track = <V extends tf.Variable>(v: V): V => {
    params.push(v);
    return v;
  };
  const embed = track(init([V, H], 0.02));
  const layers = Array.from({ length: L }, () => ({
    n1: track(ones(H)),
    wq: track(init([H, H], 0.02)),
    wk: track(init([H, H], 0.02)),
    wv: track(init([H, H], 0.02)),
    wo: track(init([H, H], 0.02)),
    n2: track(ones(H)),
    wg: track(init([H, F], 0.02)),
    wu: track(init([H, F], 0.02)),
    wd: track(init([F, H], 0.02)),
  }));
  const nf = track(ones(H));
  const head = track(init([H, V], 0.02));

  const inv = tf.tensor1d(Array.from({ length: hd / 2 }, (_, i) => 10000 ** (-(2 * i) / hd)));
  const angles = tf.outerProduct(tf.range(0, T, 1, 'float32'), inv); // [T, hd/2]
  const cos = tf.concat([tf.cos(angles), tf.cos(angles)], 1).reshape([1, 1, T, hd]);
  const sin = tf.concat([tf.sin(angles), tf.sin(angles)], 1).reshape([1, 1, T, hd]);
  const mask = tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9); // 0 on/below the diagonal
  const tokens = tf.randomUniformInt([B * T], 0, V, 11);
  const targets = tf.randomUniformInt([B * T], 0, V, 12);
  const oneHot = () => tf.oneHot(targets, V, 1, 0, 'float32');
  const optimizer = tf.train.adam(1e-3);

  const heads = (x: tf.Tensor) => tf.transpose(tf.reshape(x, [B, T, NH, hd]), [0, 2, 1, 3]);
  const loss = (): tf.Scalar => {
    let x: tf.Tensor = tf.gather(embed, tokens); // [B*T, H]
    for (const l of layers) {
      const h = rmsNorm(x, l.n1);
      const q = rotary(heads(tf.matMul(h, l.wq)), cos, sin);
      const k = rotary(heads(tf.matMul(h, l.wk)), cos, sin);
      const v = heads(tf.matMul(h, l.wv));
      const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(hd)), mask); // [B, NH, T, T]
      const o = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), v), [0, 2, 1, 3]), [
        B * T,
        H,
      ]);
      x = tf.add(x, tf.matMul(o, l.wo));
      const h2 = rmsNorm(x, l.n2);
      const gate = tf.matMul(h2, l.wg);
      x = tf.add(x, tf.matMul(tf.mul(tf.mul(gate, tf.sigmoid(gate)), tf.matMul(h2, l.wu)), l.wd)); // SwiGLU
    }
    const logits = tf.matMul(rmsNorm(x, nf), head); // [B*T, V]
    // cross-entropy = logsumexp(logits) - logits[target]; fused unless --composite-loss
    if (opts.compositeLoss)
      return tf.mean(tf.sub(tf.logSumExp(logits, -1), tf.sum(tf.mul(logits, oneHot()), -1)));
    return tf.mean(softmaxCrossEntropy(logits, targets));
  };

  const losses: number[] = [];
  const step = () => {
    const value = optimizer.minimize(loss, true, params) as tf.Scalar;
    losses.push(value.dataSync()[0]);
    value.dispose();
  };
  step(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < opts.steps; i++) {
    const t0 = performance.now();
    step();
    times.push((performance.now() - t0) / 1000);
  }
  const secondsPerStep = times.reduce((a, b) => a + b, 0) / times.length;
  const bestSecondsPerStep = Math.min(...times);
  const result: StepResult = {
    tokensPerSecond: (B * T) / bestSecondsPerStep,
    secondsPerStep,
    bestSecondsPerStep,
    losses,
    params: params.reduce((n, p) => n + p.size, 0),
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
  tf.dispose([...params, inv, angles, cos, sin, mask, tokens, targets]);
  optimizer.dispose();
  return result;
}
