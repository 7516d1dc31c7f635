// Gradient of BatchMatMul that respects broadcast batch dims. tfjs-core 4.22's own gradient
// returns matMul(a, dy, true) for b, so `matMul(x [B, T, K], w [K, N])` gets a [B, K, N]
// gradient for the [K, N] weight (issue 3; tfjs-core src/gradients/BatchMatMul_grad.ts). Here
// each gradient is summed over the batch dims its input broadcast along, then reshaped back.
import {
  type GradConfig,
  matMul,
  type NamedAttrMap,
  reshape,
  sum,
  type Tensor,
} from '@tensorflow/tfjs-core';

/** Sums `grad` [...outer, r, c] down to `shape` [...innerOuter, r, c] (leading or size-1 batch dims). */
export function reduceToShape(grad: Tensor, shape: readonly number[]): Tensor {
  if (grad.shape.length === shape.length && grad.shape.every((d, i) => d === shape[i])) return grad;
  const lead = grad.shape.length - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < grad.shape.length - 2; i++) {
    if (i < lead || (shape[i - lead] === 1 && grad.shape[i] !== 1)) axes.push(i);
  }
  return reshape(axes.length > 0 ? sum(grad, axes) : grad, [...shape]);
}

/** Whether `shape` is one matrix: rank 2, or every batch dim 1. */
function isOneMatrix(shape: readonly number[]): boolean {
  return shape.slice(0, -2).every((d) => d === 1);
}

/**
 * dB of `op(a) @ op(b)` when b is one matrix shared by a batched a (x [B, T, K] @ w [K, N]) and
 * a is not transposed: sum_b a_b^T g_b is one product of the flattened batch, a [B*T, K]^T
 * g [B*T, N], instead of B products and a sum over a [B, K, N] temporary.
 */
function sharedWeightGrad(a: Tensor, g: Tensor, b: Tensor, transposeB: boolean): Tensor {
  const k = a.shape[a.shape.length - 1]!;
  const n = g.shape[g.shape.length - 1]!;
  const a2 = reshape(a, [-1, k]);
  const g2 = reshape(g, [-1, n]);
  return reshape(transposeB ? matMul(g2, a2, true, false) : matMul(a2, g2, true, false), [
    ...b.shape,
  ]);
}

export const batchMatMulGradConfig: GradConfig = {
  kernelName: 'BatchMatMul',
  inputsToSave: ['a', 'b'],
  gradFunc: (dy: Tensor | Tensor[], saved: Tensor[], attrs: NamedAttrMap) => {
    const g = dy as Tensor;
    const [a, b] = saved;
    const { transposeA, transposeB } = attrs as { transposeA?: boolean; transposeB?: boolean };
    // dA, dB before broadcast reduction (the four transpose cases of d(op(A) op(B))).
    const da = (): Tensor => {
      if (!transposeA) return transposeB ? matMul(g, b) : matMul(g, b, false, true);
      return transposeB ? matMul(b, g, true, true) : matMul(b, g, false, true);
    };
    const db = (): Tensor => {
      if (!transposeA && a.shape.length > 2 && !isOneMatrix(a.shape) && isOneMatrix(b.shape))
        return sharedWeightGrad(a, g, b, !!transposeB);
      if (!transposeB) return transposeA ? matMul(a, g) : matMul(a, g, true, false);
      return transposeA ? matMul(g, a, true, true) : matMul(g, a, true, false);
    };
    return { a: () => reduceToShape(da(), a.shape), b: () => reduceToShape(db(), b.shape) };
  },
};
