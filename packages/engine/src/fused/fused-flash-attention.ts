// Causal attention within segments in tiles (FlashAttention, Dao et al. 2022,
// https://arxiv.org/abs/2205.14135): no mask tensor and no [T, T] scores anywhere, forward or
// backward (which recomputes the scores per tile from the saved log-sum-exp), so memory is
// linear in the sequence length.
import {
  customGrad,
  engine,
  type GradSaveFunc,
  type KernelConfig,
  reshape,
  type Tensor,
  type Tensor2D,
  type Tensor4D,
  type TensorInfo,
  zeros,
  zerosLike,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, i32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const FLASH_ATTENTION = 'Rl2FlashAttention';
export const FLASH_ATTENTION_GRAD = 'Rl2FlashAttentionGrad';

/** Whether the active backend has the tiled attention kernel. */
export function hasFlashAttention(): boolean {
  return hasKernel(FLASH_ATTENTION);
}

/**
 * softmax(q k^T / sqrt(d) + causal segment mask) v: query i of row b sees key j iff j <= i and
 * segments[b, j] == segments[b, i] (packed sequences; a run of left padding as its own segment).
 * q [B, T, nH, d], k/v [B, nKv, T, d] (query head h reads kv head floor(h / (nH / nKv))),
 * segments int32 [B, T]. Returns [B*T, nH*d]. Undefined without the kernel.
 *
 * With `queryPositions` int32 [B, Tq], the queries are a subset of the row (a context-parallel
 * rank's tokens): q [B, Tq, nH, d] over k/v [B, nKv, Tk, d] and segments [B, Tk], query i of
 * row b sitting at key position queryPositions[b, i] (it sees keys j <= that position in its
 * segment). Returns [B*Tq, nH*d]; gradients flow to q, k and v.
 */
export function flashAttention(
  q: Tensor4D,
  k: Tensor4D,
  v: Tensor4D,
  segments: Tensor2D,
  queryPositions?: Tensor2D,
): Tensor2D | undefined {
  if (
    !hasFlashAttention() ||
    [q, k, v].some((t) => t.dtype !== 'float32') ||
    segments.dtype !== 'int32' ||
    (queryPositions && queryPositions.dtype !== 'int32')
  )
    return undefined;
  const [b, t, nH, d] = q.shape;
  const [, nKv, tk] = k.shape;
  const shapeOk =
    k.shape[0] === b &&
    (queryPositions ? queryPositions.shape[0] === b && queryPositions.shape[1] === t : tk === t) &&
    k.shape[3] === d &&
    nH % nKv === 0 &&
    v.shape.every((x, i) => x === k.shape[i]) &&
    segments.shape[0] === b &&
    segments.shape[1] === tk;
  if (!shapeOk) return undefined;
  const attrs = {
    dims: queryPositions ? [b, t, nH, nKv, d, tk] : [b, t, nH, nKv, d],
    scale: 1 / Math.sqrt(d),
  };
  const f = customGrad((...args: (Tensor | GradSaveFunc)[]) => {
    const [qi, ki, vi, si, pi] = args as Tensor[];
    const [out, lse] = engine().runKernel(
      FLASH_ATTENTION,
      { q: qi!, k: ki!, v: vi!, seg: si!, qpos: pi! },
      attrs,
    ) as Tensor[];
    (args[5] as GradSaveFunc)([qi!, ki!, vi!, si!, pi!, out!, lse!]);
    return {
      value: out!,
      gradFunc: (dy: Tensor, saved: Tensor[]) => {
        const [sq, sk, sv, ss, sp, so, sl] = saved;
        const inputs = {
          q: sq!,
          k: sk!,
          v: sv!,
          seg: ss!,
          qpos: sp!,
          out: so!,
          lse: sl!,
          dy: reshape(dy, sq!.shape),
        };
        const [dq, dk, dv] = engine().runKernel(FLASH_ATTENTION_GRAD, inputs, attrs) as Tensor[];
        return [dq!, dk!, dv!, zerosLike(ss!), zerosLike(sp!)];
      },
    };
  });
  // without query positions the kernel reads none: a [B, 1] placeholder keeps one signature
  const positions = queryPositions ?? zeros([b, 1], 'int32');
  const out = reshape(f(q, k, v, segments, positions), [b * t, nH * d]) as Tensor2D;
  if (!queryPositions) positions.dispose();
  return out;
}

/** The forward and backward kernels for `backendName` on the addon. */
export function flashAttentionKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const floats = (
    backend: Parameters<Parameters<typeof asKernelFunc>[0]>[0]['backend'],
    ts: TensorInfo[],
  ) => {
    const vs = ts.map((t) => f32Values(backend, t));
    if (vs.some((x) => x === undefined))
      throw new Error(`${FLASH_ATTENTION}: needs float32 q, k, v (out, lse, dy)`);
    return vs as Float32Array[];
  };
  const segOf = (
    backend: Parameters<Parameters<typeof asKernelFunc>[0]>[0]['backend'],
    t: TensorInfo,
  ) => {
    const s = i32Values(backend, t);
    if (!s) throw new Error(`${FLASH_ATTENTION}: needs int32 segments`);
    return s;
  };
  const positionsOf = (
    backend: Parameters<Parameters<typeof asKernelFunc>[0]>[0]['backend'],
    t: TensorInfo | undefined,
  ) => (t ? (i32Values(backend, t) ?? new Int32Array(0)) : new Int32Array(0));
  const forward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { q, k, v, seg, qpos } = inputs as Record<string, TensorInfo>;
    const [qv, kv, vv] = floats(backend, [q!, k!, v!]);
    const dims = attrs!.dims as number[];
    const out = uninitF32(qv!.length);
    const lse = uninitF32(dims[0]! * dims[2]! * dims[1]!);
    addon.flashAttention(
      qv!,
      kv!,
      vv!,
      segOf(backend, seg!),
      Int32Array.from(dims),
      attrs!.scale as number,
      out,
      lse,
      positionsOf(backend, qpos),
    );
    return [
      backend.makeTensorInfo(q!.shape, 'float32', out),
      backend.makeTensorInfo([dims[0]!, dims[2]!, dims[1]!], 'float32', lse),
    ];
  });
  const backward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { q, k, v, seg, qpos, out, lse, dy } = inputs as Record<string, TensorInfo>;
    const [qv, kv, vv, ov, lv, g] = floats(backend, [q!, k!, v!, out!, lse!, dy!]);
    const dq = uninitF32(qv!.length);
    const dk = uninitF32(kv!.length);
    const dv = uninitF32(vv!.length);
    addon.flashAttentionGrad(
      qv!,
      kv!,
      vv!,
      segOf(backend, seg!),
      Int32Array.from(attrs!.dims as number[]),
      attrs!.scale as number,
      ov!,
      lv!,
      g!,
      dq,
      dk,
      dv,
      positionsOf(backend, qpos),
    );
    return [q!, k!, v!].map((t, i) => backend.makeTensorInfo(t.shape, 'float32', [dq, dk, dv][i]!));
  });
  return [
    { kernelName: FLASH_ATTENTION, backendName, kernelFunc: forward },
    { kernelName: FLASH_ATTENTION_GRAD, backendName, kernelFunc: backward },
  ];
}
