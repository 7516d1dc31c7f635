// UnsortedSegmentSum (the gradient of tf.gather: embedding lookups, index gathers) in plain JS
// for the backends without the C addon. The stock cpu kernel builds a mask per segment, O(segments
// x rows): minutes for an 8k-vocabulary embedding or a gather over a few thousand row positions.
// This one is one pass over the rows.
import {
  type KernelFunc,
  type TensorInfo,
  getKernel,
  registerKernel,
  unregisterKernel,
} from '@tensorflow/tfjs-core';
import { asKernelFunc, f32Values, i32Values, sizeOf } from './native-kernel.js';

/** The linear-time kernel, falling back to `stock` for inputs it does not handle (non-float32, other layouts). */
export function jsSegmentSum(stock: KernelFunc): KernelFunc {
  return asKernelFunc((args) => {
    const { x, segmentIds } = args.inputs;
    const numSegments = ((args.attrs ?? {}) as { numSegments?: number }).numSegments ?? 0;
    const xv = f32Values(args.backend, x);
    const ids = i32Values(args.backend, segmentIds);
    if (!x || !segmentIds || !xv || !ids || segmentIds.shape.some((d, i) => d !== x.shape[i]))
      return stock(args as never) as TensorInfo;
    const rest = x.shape.slice(segmentIds.shape.length);
    const inner = sizeOf(rest);
    const out = new Float32Array(numSegments * inner);
    for (let r = 0; r < ids.length; r++) {
      const s = ids[r] as number;
      if (s < 0 || s >= numSegments) continue; // as tf.unsortedSegmentSum: out-of-range ids are dropped
      const from = r * inner;
      const to = s * inner;
      for (let j = 0; j < inner; j++)
        out[to + j] = (out[to + j] as number) + (xv[from + j] as number);
    }
    return args.backend.makeTensorInfo([numSegments, ...rest], 'float32', out);
  });
}

/** Replaces `backendName`'s UnsortedSegmentSum by {@link jsSegmentSum} (once). */
export function useJsSegmentSum(backendName: string): void {
  const config = getKernel('UnsortedSegmentSum', backendName);
  if (!config || (config.kernelFunc as { rl2?: boolean }).rl2) return;
  const kernelFunc = Object.assign(jsSegmentSum(config.kernelFunc), { rl2: true });
  unregisterKernel('UnsortedSegmentSum', backendName);
  registerKernel({ ...config, kernelFunc });
}
