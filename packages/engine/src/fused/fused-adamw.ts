// One AdamW step per parameter as a single native pass (the composite is ~15 elementwise
// kernels, each a full pass over the parameter), one WGSL pass in place on webgpu
// (webgpu/wgsl-adamw.ts), composite tfjs ops on other backends.
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';
import { countWrite } from '../write-count.js';

export const ADAMW = 'Rl2AdamW';
/** The same pass writing p, m and v over their own buffers (returns a scalar 0 to dispose). */
export const ADAMW_IN_PLACE = 'Rl2AdamWInPlace';

/** AdamW hyper-parameters of one step; `step` counts from 1 (bias correction). */
export interface AdamWStep {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number;
  /** `adamWInPlace` only: the gradient is multiplied by this first (the clipping factor); default 1. */
  gradScale?: number;
}

/**
 * AdamW (Loshchilov & Hutter 2019, https://arxiv.org/abs/1711.05101), decoupled decay:
 * m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2,
 * p' = p (1 - lr wd) - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps).
 * Returns new tensors (the caller assigns them); same shapes as `param`, float32.
 */
export function adamWUpdate(
  param: tf.Tensor,
  grad: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  h: AdamWStep,
): { param: tf.Tensor; m: tf.Tensor; v: tf.Tensor } {
  const c1 = 1 - h.beta1 ** h.step;
  const c2 = 1 - h.beta2 ** h.step;
  if (
    hasKernel(ADAMW) &&
    [param, grad, m, v].every((t) => t.dtype === 'float32' && t.size === param.size)
  ) {
    const hp = [h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, c1, c2];
    const [p2, m2, v2] = tf.engine().runKernel(ADAMW, { param, grad, m, v }, { hp }) as tf.Tensor[];
    return { param: p2!, m: m2!, v: v2! };
  }
  return tf.tidy(() => {
    const m2 = tf.add(tf.mul(m, h.beta1), tf.mul(grad, 1 - h.beta1));
    const v2 = tf.add(tf.mul(v, h.beta2), tf.mul(tf.square(grad), 1 - h.beta2));
    const update = tf.div(tf.div(m2, c1), tf.add(tf.sqrt(tf.div(v2, c2)), h.eps));
    return {
      param: tf.sub(tf.mul(param, 1 - h.lr * h.weightDecay), tf.mul(update, h.lr)),
      m: m2,
      v: v2,
    };
  });
}

/**
 * One AdamW step that updates `param`, `m` and `v` themselves. On the native backend (and on
 * webgpu, over GPU buffers), when each of the three variables is the only holder of its buffer,
 * the fused kernel writes over those buffers: no new parameter-sized arrays (a step on a 0.6B model would otherwise allocate
 * three more copies of its largest tensor at a time, and leave them to the garbage collector).
 * Elsewhere (or when a buffer is shared, e.g. with a clone) it is `adamWUpdate` + `assign`.
 */
export function adamWInPlace(
  param: tf.Variable,
  grad: tf.Tensor,
  m: tf.Variable,
  v: tf.Variable,
  h: AdamWStep,
): void {
  const scale = h.gradScale ?? 1;
  const inPlace =
    hasKernel(ADAMW_IN_PLACE) &&
    [param, grad, m, v].every((t) => t.dtype === 'float32' && t.size === param.size) &&
    [param, m, v].every(ownsBuffer);
  // the in-place kernels (native, webgpu) scale the gradient as they read it; elsewhere a scaled copy first
  if (scale !== 1 && !inPlace) {
    const scaled = tf.mul(grad, scale);
    adamWInPlace(param, scaled, m, v, { ...h, gradScale: 1 });
    scaled.dispose();
    return;
  }
  if (inPlace) {
    const hp = [
      h.lr,
      h.beta1,
      h.beta2,
      h.eps,
      h.weightDecay,
      1 - h.beta1 ** h.step,
      1 - h.beta2 ** h.step,
      ...(scale === 1 ? [] : [scale]),
    ];
    (tf.engine().runKernel(ADAMW_IN_PLACE, { param, grad, m, v }, { hp }) as tf.Tensor).dispose();
    for (const t of [param, m, v]) countWrite(t);
    return;
  }
  const next = adamWUpdate(param, grad, m, v, h);
  param.assign(next.param);
  m.assign(next.m);
  v.assign(next.v);
  tf.dispose([next.param, next.m, next.v]);
}

/**
 * Multiplies `t` by `c` over its own buffer, when `t` alone holds a float32 array on a cpu-style
 * backend (e.g. a gradient about to be consumed): true; otherwise nothing is changed: false.
 */
export function scaleInPlace(t: tf.Tensor, c: number): boolean {
  if (t.dtype !== 'float32' || !ownsF32Buffer(t)) return false;
  const values = (tf.backend() as unknown as MathBackendCPU).data.get(t.dataId)!
    .values as Float32Array;
  if (c !== 1) {
    for (let i = 0; i < values.length; i++) values[i]! *= c;
    countWrite(t);
  }
  return true;
}

/** Whether `t` is the only tensor over its Float32Array on a cpu-style backend (safe to write in place). */
function ownsF32Buffer(t: tf.Tensor): boolean {
  const backend = tf.backend() as unknown as Partial<MathBackendCPU>;
  return ownsBuffer(t) && backend.data?.get(t.dataId)?.values instanceof Float32Array;
}

/**
 * Whether `t` is the only tensor over its buffer, so a kernel may write over it: on a cpu-style
 * backend a Float32Array; on webgpu (no host `data` map) its GPU buffer.
 */
function ownsBuffer(t: tf.Tensor): boolean {
  const backend = tf.backend() as unknown as Partial<MathBackendCPU>;
  if (typeof backend.refCount !== 'function' || backend.refCount(t.dataId) !== 1) return false;
  return backend.data ? backend.data.get(t.dataId)?.values instanceof Float32Array : true;
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
  const inPlace = asKernelFunc(({ inputs, backend, attrs }) => {
    const { param, grad, m, v } = inputs as Record<string, tf.TensorInfo>;
    const [p, mv, vv] = [param, m, v].map((t) => backend.data.get(t!.dataId)?.values);
    const g = f32Values(backend, grad);
    if (
      !(p instanceof Float32Array && mv instanceof Float32Array && vv instanceof Float32Array && g)
    )
      throw new Error(`${ADAMW_IN_PLACE}: needs float32 param, grad, m and v`);
    // elementwise: each output element is written after its inputs are read, so aliasing is safe
    addon.adamw(p, g, mv, vv, Float32Array.from(attrs!.hp as number[]), p, mv, vv);
    return backend.makeTensorInfo([], 'float32', new Float32Array(1));
  });
  return [
    { kernelName: ADAMW, backendName, kernelFunc },
    { kernelName: ADAMW_IN_PLACE, backendName, kernelFunc: inPlace },
  ];
}
