// Index kernels in C: Transpose (any permutation, float32/int32), GatherV2 (the embedding
// lookup) and UnsortedSegmentSum (its gradient: the stock cpu kernel is O(segments x rows),
// minutes for an 8k vocabulary; this one is one pass over the rows).
import { type TensorInfo, util } from '@tensorflow/tfjs-core';
import {
  asKernelFunc,
  f32Values,
  i32Values,
  type NativeKernelOverride,
  sizeOf,
  uninitF32,
} from './native-kernel.js';

export const transposeOverride: NativeKernelOverride = {
  kernelName: 'Transpose',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { x } = args.inputs;
      const perm = ((args.attrs ?? {}) as { perm?: number[] }).perm ?? [];
      const xv = f32Values(args.backend, x) ?? i32Values(args.backend, x);
      if (
        !x ||
        !xv ||
        x.shape.length === 0 ||
        x.shape.length > 8 ||
        perm.length !== x.shape.length
      ) {
        return stock(args as never) as TensorInfo;
      }
      const shape = perm.map((p) => x.shape[p]);
      const out = xv instanceof Float32Array ? uninitF32(xv.length) : new Int32Array(xv.length);
      if (xv.length > 0) addon.transpose(xv, Int32Array.from(x.shape), Int32Array.from(perm), out);
      return args.backend.makeTensorInfo(shape, x.dtype, out);
    }),
};

export const gatherOverride: NativeKernelOverride = {
  kernelName: 'GatherV2',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { x, indices } = args.inputs;
      const attrs = (args.attrs ?? {}) as { axis?: number; batchDims?: number };
      const xv = f32Values(args.backend, x);
      const iv = i32Values(args.backend, indices);
      if (!x || !indices || !xv || !iv || (attrs.batchDims ?? 0) !== 0 || x.shape.length === 0) {
        return stock(args as never) as TensorInfo;
      }
      const axis = util.parseAxisParam(attrs.axis ?? 0, x.shape)[0];
      const outer = sizeOf(x.shape.slice(0, axis));
      const n = x.shape[axis];
      const inner = sizeOf(x.shape.slice(axis + 1));
      const shape = [...x.shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)];
      const out = uninitF32(outer * iv.length * inner);
      const bad = out.length > 0 ? addon.gather(xv, outer, n, inner, iv, out) : -1;
      if (bad >= 0) {
        throw new Error(
          `GatherV2: index ${iv[bad]} at position ${bad} is not in [0, ${n - 1}] (axis ${axis} of shape [${x.shape}])`,
        );
      }
      return args.backend.makeTensorInfo(shape, 'float32', out);
    }),
};

export const segmentSumOverride: NativeKernelOverride = {
  kernelName: 'UnsortedSegmentSum',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { x, segmentIds } = args.inputs;
      const numSegments = ((args.attrs ?? {}) as { numSegments?: number }).numSegments ?? 0;
      const xv = f32Values(args.backend, x);
      const ids = i32Values(args.backend, segmentIds);
      if (!x || !segmentIds || !xv || !ids) return stock(args as never) as TensorInfo;
      const idRank = segmentIds.shape.length;
      if (segmentIds.shape.some((d, i) => d !== x.shape[i]))
        return stock(args as never) as TensorInfo;
      const rest = x.shape.slice(idRank);
      const inner = sizeOf(rest);
      const out = new Float32Array(numSegments * inner); // accumulated into: must start at 0
      if (out.length > 0) addon.segmentSum(xv, ids, numSegments, inner, out);
      return args.backend.makeTensorInfo([numSegments, ...rest], 'float32', out);
    }),
};

export const indexOverrides: NativeKernelOverride[] = [
  transposeOverride,
  gatherOverride,
  segmentSumOverride,
];
