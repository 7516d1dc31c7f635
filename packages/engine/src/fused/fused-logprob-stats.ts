// Per-token log-prob and entropy from a [N, V] logits block in one native pass each way: the
// composite version keeps z, exp(z - m), p and several [N, V] temporaries (256 MiB each at
// 8192 tokens x 8192 vocabulary), the fused one only z forward and dz backward.
import {
  engine,
  type KernelConfig,
  type Tensor,
  type Tensor2D,
  type TensorInfo,
} from '@tensorflow/tfjs-core';
import { EngineError } from '../errors.js';
import { asKernelFunc, f32Values, i32Values, uninitF32 } from '../kernels/native-kernel.js';
import type { NativeAddon } from '../native-addon.js';
import { hasKernel } from './fused-kernel.js';

export const LOGPROB_STATS = 'Rl2LogprobStats';
export const LOGPROB_STATS_GRAD = 'Rl2LogprobStatsGrad';

/** Whether the active backend has the fused log-prob kernels. */
export function hasLogprobStats(): boolean {
  return hasKernel(LOGPROB_STATS);
}

/**
 * z [N, V] (logits already divided by the temperature), targets [N] int32 ->
 * [stats [N, 2] = (logp of the target, entropy), lse [N, 1]]. Native backend only.
 */
export function logprobStats(z: Tensor2D, targets: Tensor): [Tensor2D, Tensor2D] {
  return engine().runKernel(LOGPROB_STATS, { z, targets }, {}) as unknown as [Tensor2D, Tensor2D];
}

/**
 * dL/dz scaled by `inv` = 1/temperature, given dy [N, 2] (gradients of logp and entropy):
 * dz = -p (g_logp + g_H (z - lse + H)) inv, plus g_logp inv at the target. Native backend only.
 */
export function logprobStatsGrad(
  z: Tensor2D,
  targets: Tensor,
  lse: Tensor2D,
  stats: Tensor2D,
  dy: Tensor,
  inv: number,
): Tensor2D {
  return engine().runKernel(
    LOGPROB_STATS_GRAD,
    { z, targets, lse, stats, dy },
    { inv },
  ) as Tensor2D;
}

/** The forward and backward kernels for `backendName` on the addon. */
export function logprobStatsKernels(addon: NativeAddon, backendName: string): KernelConfig[] {
  const forward = asKernelFunc(({ inputs, backend }) => {
    const { z, targets } = inputs as { z: TensorInfo; targets: TensorInfo };
    const zv = f32Values(backend, z);
    const y = i32Values(backend, targets);
    if (!zv || !y) throw new Error(`${LOGPROB_STATS}: needs float32 z and int32 targets`);
    const [rows, cols] = z.shape as [number, number];
    const stats = new Float32Array(rows * 2);
    const lse = new Float32Array(rows);
    const bad = addon.logpStats(zv, rows, cols, y, stats, lse);
    if (bad >= 0)
      throw new EngineError(
        'INVALID_ARGUMENT',
        `tokenLogprobs: target ${y[bad]} at position ${bad} is not in [0, vocab size ${cols})`,
      );
    return [
      backend.makeTensorInfo([rows, 2], 'float32', stats),
      backend.makeTensorInfo([rows, 1], 'float32', lse),
    ];
  });
  const backward = asKernelFunc(({ inputs, backend, attrs }) => {
    const { z, targets, lse, stats, dy } = inputs as Record<string, TensorInfo>;
    const zv = f32Values(backend, z);
    const y = i32Values(backend, targets);
    const [l, s, g] = [lse, stats, dy].map((t) => f32Values(backend, t));
    if (!zv || !y || !l || !s || !g)
      throw new Error(`${LOGPROB_STATS_GRAD}: needs float32 z, lse, stats, dy and int32 targets`);
    const [rows, cols] = z!.shape as [number, number];
    const dz = uninitF32(rows * cols);
    addon.logpStatsGrad(zv, rows, cols, y, l, s, g, attrs!.inv as number, dz);
    return backend.makeTensorInfo([rows, cols], 'float32', dz);
  });
  return [
    { kernelName: LOGPROB_STATS, backendName, kernelFunc: forward },
    { kernelName: LOGPROB_STATS_GRAD, backendName, kernelFunc: backward },
  ];
}
