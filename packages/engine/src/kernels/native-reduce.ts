// Softmax and the float32 reductions (Sum, Mean, Max, Min) in C. A reduction over a contiguous
// run of axes is x viewed as [outer, r, inner] -> [outer, inner]: that covers the last-axis
// reductions of softmax/logsumexp/RMSNorm and the leading-axis sums of broadcast gradients.
import { type TensorInfo, util } from '@tensorflow/tfjs-core';
import { ReduceOp } from '../native-addon.js';
import {
  asKernelFunc,
  f32Values,
  type NativeKernelOverride,
  sizeOf,
  uninitF32,
} from './native-kernel.js';

/** [outer, r, inner] for reducing `axes` of `shape`, or undefined when the axes are not contiguous. */
export function reductionView(
  shape: readonly number[],
  axes: readonly number[],
): [number, number, number] | undefined {
  const sorted = [...axes].sort((x, y) => x - y);
  for (let i = 1; i < sorted.length; i++) if (sorted[i] !== sorted[i - 1] + 1) return undefined;
  const first = sorted[0];
  const last = sorted[sorted.length - 1];
  return [
    sizeOf(shape.slice(0, first)),
    sizeOf(shape.slice(first, last + 1)),
    sizeOf(shape.slice(last + 1)),
  ];
}

function reduceOverride(
  kernelName: string,
  op: number,
  axisAttr: 'axis' | 'reductionIndices',
): NativeKernelOverride {
  return {
    kernelName,
    make: (addon, stock) =>
      asKernelFunc((args) => {
        const { x } = args.inputs;
        const xv = f32Values(args.backend, x);
        const attrs = (args.attrs ?? {}) as Record<string, number | number[] | boolean | undefined>;
        if (!x || !xv || x.shape.length === 0) return stock(args as never) as TensorInfo;
        const axes = util.parseAxisParam(attrs[axisAttr] as number | number[], x.shape);
        const view = axes.length > 0 ? reductionView(x.shape, axes) : undefined;
        if (!view || view[1] === 0) return stock(args as never) as TensorInfo;
        const [outer, r, inner] = view;
        const out = uninitF32(outer * inner);
        if (out.length > 0) addon.reduce(op, xv, outer, r, inner, out);
        const shape = attrs.keepDims
          ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d))
          : x.shape.filter((_, i) => !axes.includes(i));
        return args.backend.makeTensorInfo(shape, 'float32', out);
      }),
  };
}

export const softmaxOverride: NativeKernelOverride = {
  kernelName: 'Softmax',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { logits } = args.inputs;
      const xv = f32Values(args.backend, logits);
      const dim = ((args.attrs ?? {}) as { dim?: number }).dim ?? -1;
      if (!logits || !xv || logits.shape.length === 0) return stock(args as never) as TensorInfo;
      const rank = logits.shape.length;
      if (dim !== -1 && dim !== rank - 1) return stock(args as never) as TensorInfo;
      const cols = logits.shape[rank - 1];
      const out = uninitF32(xv.length);
      if (cols > 0 && xv.length > 0) addon.softmax(xv, xv.length / cols, cols, out);
      return args.backend.makeTensorInfo(logits.shape, 'float32', out);
    }),
};

export const reduceOverrides: NativeKernelOverride[] = [
  reduceOverride('Sum', ReduceOp.sum, 'axis'),
  reduceOverride('Mean', ReduceOp.mean, 'axis'),
  reduceOverride('Max', ReduceOp.max, 'reductionIndices'),
  reduceOverride('Min', ReduceOp.min, 'axis'),
  softmaxOverride,
];
