// One AdamW step per parameter as a single native pass (the composite is ~15 elementwise
// kernels, each a full pass over the parameter), composite tfjs ops on other backends.
import * as tf from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const ADAMW = 'Rl2AdamW';

/** AdamW hyper-parameters of one step; `step` counts from 1 (bias correction). */
export interface AdamWStep {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number;
}

/**
 * AdamW (Loshchilov & Hutter 2019, https://arxiv.org/abs/1711.05101), decoupled decay:
 * m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2,
 * p' = p (1 - lr wd) - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps).
 * Returns new tensors (the caller assigns them); same shapes as `param`, float32.
 */
export function adamWUpdate(param: tf.Tensor, grad: tf.Tensor, m: tf.Tensor, v: tf.Tensor, h: AdamWStep): { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor } {
  const c1 = 1 - h.beta1 ** h.step;
  const c2 = 1 - h.beta2 ** h.step;
  if (hasKernel(ADAMW) && [param, grad, m, v].every((t) => t.dtype === 'float32' && t.size === param.size)) {
    const hp = [h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, c1, c2];
    const [p2, m2, v2] = tf.engine().runKernel(ADAMW, { param, grad, m, v }, { hp }) as tf.Tensor[];
    return { param: p2!, m: m2!, v: v2! };
  }
  return tf.tidy(() => {
    const m2 = tf.add(tf.mul(m, h.beta1), tf.mul(grad, 1 - h.beta1));
    const v2 = tf.add(tf.mul(v, h.beta2), tf.mul(tf.square(grad), 1 - h.beta2));
    const update = tf.div(tf.div(m2, c1), tf.add(tf.sqrt(tf.div(v2, c2)), h.eps));
    return { param: tf.sub(tf.mul(param, 1 - h.lr * h.weightDecay), tf.mul(update, h.lr)), m: m2, v: v2 };
  });
}

/** The kernel for `backendName` on the addon. */
export function adamWKernels(addon: NativeAddon, backendName: string): tf.KernelConfig[] {
  const kernelFunc = asKernelFunc(({ inputs, backend, attrs }) => {
    const { param, grad, m, v } = inputs as Record<string, tf.TensorInfo>;
    const [p, g, mv, vv] = [param, grad, m, v].map((t) => f32Values(backend, t));
    if (!p || !g || !mv || !vv) throw new Error(`${ADAMW}: needs float32 param, grad, m and v`);
    const outs = [uninitF32(p.length), uninitF32(p.length), uninitF32(p.length)] as const;
    addon.adamw(p, g, mv, vv, Float32Array.from(attrs!.hp as number[]), ...outs);
    return outs.map((o) => backend.makeTensorInfo(param!.shape, 'float32', o));
  });
  return [{ kernelName: ADAMW, backendName, kernelFunc }];
}
