// Gradients of Maximum, Minimum and SquaredDifference that sum over broadcast dims. tfjs-core
// 4.22's versions (src/gradients/{Maximum,Minimum,SquaredDifference}_grad.ts) return the
// gradient at the broadcast output shape, so `tf.maximum(x [3, 4], 0.5)` fails backprop with
// "gradient of input 'b' has shape '3,4'". Add/Sub/Mul/Div already reduce; these now do too.
import {
  broadcast_util,
  cast,
  type GradConfig,
  greater,
  greaterEqual,
  less,
  lessEqual,
  mul,
  reshape,
  scalar,
  sub,
  sum,
  type Tensor,
} from '@tensorflow/tfjs-core';

/** Sums `grad` (at the broadcast output shape) back to `shape`, the input's own shape. */
export function unbroadcast(grad: Tensor, shape: number[]): Tensor {
  const axes = broadcast_util.getReductionAxes(shape, grad.shape);
  return reshape(axes.length > 0 ? sum(grad, axes) : grad, shape);
}

function selectGrad(
  kernelName: string,
  pickA: (a: Tensor, b: Tensor) => Tensor,
  pickB: (a: Tensor, b: Tensor) => Tensor,
): GradConfig {
  return {
    kernelName,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const [a, b] = saved;
      const g = dy as Tensor;
      return {
        a: () => unbroadcast(mul(g, cast(pickA(a, b), 'float32')), a.shape),
        b: () => unbroadcast(mul(g, cast(pickB(a, b), 'float32')), b.shape),
      };
    },
  };
}

/** d max(a, b): to a where a >= b, else to b (tfjs's tie rule). */
export const maximumGradConfig = selectGrad('Maximum', greaterEqual, less);
/** d min(a, b): to a where a <= b, else to b. */
export const minimumGradConfig = selectGrad('Minimum', lessEqual, greater);

/** d (a - b)^2 = 2 (a - b) da - 2 (a - b) db. */
export const squaredDifferenceGradConfig: GradConfig = {
  kernelName: 'SquaredDifference',
  inputsToSave: ['a', 'b'],
  gradFunc: (dy, saved) => {
    const [a, b] = saved;
    const twice = mul(scalar(2), sub(a, b));
    return {
      a: () => unbroadcast(mul(dy as Tensor, twice), a.shape),
      b: () => unbroadcast(mul(dy as Tensor, mul(twice, scalar(-1))), b.shape),
    };
  },
};

export const broadcastGradConfigs: GradConfig[] = [
  maximumGradConfig,
  minimumGradConfig,
  squaredDifferenceGradConfig,
];
