// Scaled dot-product attention as one native call per direction: per (sequence, kv head) the
// scores, additive mask, softmax and P V run in C on a reused [S, L] scratch, so no
// [B, heads, S, L] tensor is created or kept for the backward (it recomputes P, as
// FlashAttention does: Dao et al. 2022, https://arxiv.org/abs/2205.14135).
import {
  customGrad,
  engine,
  type GradSaveFunc,
  type KernelConfig,
  reshape,
  type Tensor,
  type Tensor2D,
  type Tensor3D,
  type Tensor4D,
  type TensorInfo,
  zerosLike,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const ATTENTION = 'Rl2Attention';
export const ATTENTION_GRAD = 'Rl2AttentionGrad';

/**
 * softmax(q k^T / sqrt(d) + mask) v with grouped-query heads (query head h reads kv head
 * floor(h / (nH / nKv))). q [B, S, nH, d], k/v [B, nKv, L, d], mask additive [B or 1, S, L].
 * Returns [B*S, nH*d]. Gradient: dP = dO v^T, dS = P (dP - rowsum(P dP)), dq = dS k / sqrt(d),
 * dk = dS^T q / sqrt(d), dv = P^T dO; the mask gets none. Undefined without the fused kernel.
 */
export function fusedAttention(
  q: Tensor4D,
  k: Tensor4D,
  v: Tensor4D,
  mask: Tensor3D,
): Tensor2D | undefined {
  if (!hasKernel(ATTENTION) || [q, k, v, mask].some((t) => t.dtype !== 'float32')) return undefined;
  const [b, s, nH, d] = q.shape;
  const [, nKv, l] = k.shape;
  const shapeOk =
    k.shape[0] === b &&
    k.shape[3] === d &&
    nH % nKv === 0 &&
    v.shape.every((x, i) => x === k.shape[i]) &&
    (mask.shape[0] === 1 || mask.shape[0] === b) &&
    mask.shape[1] === s &&
    mask.shape[2] === l;
  if (!shapeOk) return undefined;
  const attrs = { dims: [b, s, l, nH, nKv, d, mask.shape[0]], scale: 1 / Math.sqrt(d) };
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const [qi, ki, vi, mi] = args as Tensor[];
    (args[4] as GradSaveFunc)([qi!, ki!, vi!, mi!]);
    return {
      value: engine().runKernel(ATTENTION, { q: qi!, k: ki!, v: vi!, mask: mi! }, attrs) as Tensor,
      gradFunc: (dy: Tensor, saved: Tensor[]) => {
        const [sq, sk, sv, sm] = saved;
        const [dq, dk, dv] = engine().runKernel(
          ATTENTION_GRAD,
          { q: sq!, k: sk!, v: sv!, mask: sm!, dy: reshape(dy, sq!.shape) },
          attrs,
        ) as Tensor[];
        return [dq!, dk!, dv!, zerosLike(sm!)];
      },
    };
  });
  return reshape(f(q, k, v, mask), [b * s, nH * d]) as Tensor2D;
}

/** The forward and backward kernels for `backendName` on the addon. */
export function attentionKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const read = (
    backend: Parameters<Parameters<typeof asKernelFunc>[0]>[0]['backend'],
    ts: TensorInfo[],
  ) => {
    const vs = ts.map((t) => f32Values(backend, t));
    if (vs.some((x) => x === undefined))
      throw new Error(`${ATTENTION}: needs float32 q, k, v, mask (and dy)`);
    return vs as Float32Array[];
  };
  const forward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as Record<string, TensorInfo>;
    const [qv, kv, vv, mv] = read(backend, [q!, k!, v!, mask!]);
    const out = uninitF32(qv!.length);
    addon.attention(
      qv!,
      kv!,
      vv!,
      mv!,
      Int32Array.from(attrs!.dims as number[]),
      attrs!.scale as number,
      out,
    );
    return backend.makeTensorInfo(q!.shape, 'float32', out);
  });
  const backward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { q, k, v, mask, dy } = inputs as Record<string, TensorInfo>;
    const [qv, kv, vv, mv, g] = read(backend, [q!, k!, v!, mask!, dy!]);
    const dq = uninitF32(qv!.length);
    const dk = uninitF32(kv!.length);
    const dv = uninitF32(vv!.length);
    addon.attentionGrad(
      qv!,
      kv!,
      vv!,
      mv!,
      Int32Array.from(attrs!.dims as number[]),
      attrs!.scale as number,
      g!,
      dq,
      dk,
      dv,
    );
    return [q!, k!, v!].map((t, i) => backend.makeTensorInfo(t.shape, 'float32', [dq, dk, dv][i]!));
  });
  return [
    { kernelName: ATTENTION, backendName, kernelFunc: forward },
    { kernelName: ATTENTION_GRAD, backendName, kernelFunc: backward },
  ];
}
