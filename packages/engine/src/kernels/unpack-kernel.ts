// Unpack (tf.unstack) as strided copies. The stock cpu kernel slices each output element by
// element through TensorBuffer index arithmetic: unstacking the log-prob head's [2048, 2]
// (log-prob, entropy) took 40-80 ms of a tiny-Llama training step; this takes microseconds.
import type { TensorInfo } from '@tensorflow/tfjs-core';
import {
  allocFor,
  asKernelFunc,
  type NativeKernelOverride,
  numericValues,
  sizeOf,
} from './native-kernel.js';

export const unpackOverride: NativeKernelOverride = {
  kernelName: 'Unpack',
  make: (_addon, stock) =>
    asKernelFunc((args) => {
      const { value } = args.inputs;
      const values = numericValues(args.backend, value);
      if (!value || !values || value.dtype === 'string')
        return stock(args as never) as TensorInfo[];
      const { shape, dtype } = value;
      const attr = (args.attrs as { axis?: number } | undefined)?.axis ?? 0;
      const axis = attr < 0 ? attr + shape.length : attr;
      const n = shape[axis]!;
      const outer = sizeOf(shape.slice(0, axis));
      const inner = sizeOf(shape.slice(axis + 1));
      const outShape = shape.filter((_, i) => i !== axis);
      return Array.from({ length: n }, (_, j) => {
        const out = allocFor(dtype as 'float32' | 'int32' | 'bool', outer * inner);
        if (inner === 1) {
          for (let o = 0; o < outer; o++) out[o] = values[o * n + j]!;
        } else {
          for (let o = 0; o < outer; o++) {
            const src = (o * n + j) * inner;
            out.set(values.subarray(src, src + inner), o * inner);
          }
        }
        return args.backend.makeTensorInfo(outShape, dtype, out);
      });
    }),
};
