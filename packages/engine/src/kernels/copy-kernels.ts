// Slice, SplitV and Concat as block copies: the addon's stridedCopy (memcpy per row) for
// float32/int32, else TypedArray.set of the longest contiguous runs (bool, or no addon).
// The stock cpu kernels index element by element; SplitV of a [1, 4, 256, 64] tensor (rotary
// embedding's halves) took ~250 ms there, well under 1 ms here.
import { backend_util, slice_util, type TensorInfo, util } from '@tensorflow/tfjs-core';
import type { NativeAddon } from '../native-addon.js';
import {
  allocFor,
  asKernelFunc,
  type CpuKernelArgs,
  type NativeKernelOverride,
  type NumericArray,
  numericValues,
  sizeOf,
} from './native-kernel.js';

/** Below this many elements a plain loop beats subarray()+set() (which allocates a view). */
const SHORT_RUN = 64;

/** out[o .. o+n) = x[off .. off+n). */
function copyRun(x: NumericArray, off: number, out: NumericArray, o: number, n: number): void {
  if (n < SHORT_RUN) {
    for (let i = 0; i < n; i++) out[o + i] = x[off + i];
  } else {
    out.set(x.subarray(off, off + n), o);
  }
}

/** Copies the box `begin`/`size` of `x` (row-major `shape`) into `out`, one contiguous run at a time. */
export function copySlice(
  x: NumericArray,
  shape: readonly number[],
  begin: readonly number[],
  size: readonly number[],
  out: NumericArray,
): void {
  const r = shape.length;
  if (r === 0 || sizeOf(size) === 0) {
    if (r === 0) out[0] = x[0];
    return;
  }
  const strides = util.computeStrides([...shape]);
  // dims after d0 are taken whole, so each run covers size[d0] * stride[d0] elements
  let d0 = r - 1;
  while (d0 > 0 && size[d0] === shape[d0]) d0--;
  const run = size[d0] * (d0 === r - 1 ? 1 : strides[d0]);
  const idx = new Array<number>(d0).fill(0);
  const runs = sizeOf(size.slice(0, d0));
  for (let k = 0, o = 0; k < runs; k++, o += run) {
    let off = begin[d0] * (d0 === r - 1 ? 1 : strides[d0]);
    for (let d = 0; d < d0; d++) off += (begin[d] + idx[d]) * strides[d];
    copyRun(x, off, out, o, run);
    for (let d = d0 - 1; d >= 0; d--) {
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
}

/** Row-major element strides of `shape`. */
function stridesOf(shape: readonly number[]): Int32Array {
  const strides = new Int32Array(shape.length);
  for (let d = shape.length - 1, s = 1; d >= 0; s *= shape[d], d--) strides[d] = s;
  return strides;
}

/** The 4-byte arrays the addon copies, when the addon is there and the rank fits. */
function canStride(
  addon: NativeAddon | undefined,
  v: NumericArray,
  rank: number,
): addon is NativeAddon {
  return addon !== undefined && rank >= 1 && rank <= 8 && !(v instanceof Uint8Array);
}

function sliceInfo(
  args: CpuKernelArgs,
  x: TensorInfo,
  xv: NumericArray,
  begin: number[],
  size: number[],
  addon?: NativeAddon,
): TensorInfo {
  const out = allocFor(x.dtype as 'float32', sizeOf(size));
  if (canStride(addon, xv, x.shape.length) && out.length > 0) {
    const xs = stridesOf(x.shape);
    const offset = begin.reduce((acc, b, d) => acc + b * xs[d], 0);
    addon.stridedCopy(
      xv as Float32Array,
      offset,
      xs,
      out as Float32Array,
      0,
      stridesOf(size),
      Int32Array.from(size),
    );
  } else {
    copySlice(xv, x.shape, begin, size, out);
  }
  return args.backend.makeTensorInfo(size, x.dtype, out);
}

export const sliceOverride: NativeKernelOverride = {
  kernelName: 'Slice',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { x } = args.inputs;
      const xv = numericValues(args.backend, x);
      if (!x || !xv) return stock(args as never) as TensorInfo;
      const attrs = (args.attrs ?? {}) as { begin: number | number[]; size?: number | number[] };
      const [begin, size] = slice_util.parseSliceParams(x as never, attrs.begin, attrs.size);
      slice_util.assertParamsValid(x as never, begin, size);
      return sliceInfo(args, x, xv, begin, size, addon);
    }),
};

export const splitOverride: NativeKernelOverride = {
  kernelName: 'SplitV',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const { x } = args.inputs;
      const xv = numericValues(args.backend, x);
      if (!x || !xv) return stock(args as never) as TensorInfo[];
      const attrs = (args.attrs ?? {}) as { numOrSizeSplits: number | number[]; axis: number };
      const axis = util.parseAxisParam(attrs.axis, x.shape)[0];
      const sizes = backend_util.prepareSplitSize(x as never, attrs.numOrSizeSplits, axis);
      const begin = new Array<number>(x.shape.length).fill(0);
      return sizes.map((s) => {
        const size = [...x.shape];
        size[axis] = s;
        const piece = sliceInfo(args, x, xv, [...begin], size, addon);
        begin[axis] += s;
        return piece;
      });
    }),
};

export const concatOverride: NativeKernelOverride = {
  kernelName: 'Concat',
  make: (addon, stock) =>
    asKernelFunc((args) => {
      const inputs = Object.values(args.inputs).filter((t): t is TensorInfo => t !== undefined);
      const values = inputs.map((t) => numericValues(args.backend, t));
      const dtype = inputs[0]?.dtype;
      if (inputs.length === 0 || values.some((v) => !v) || inputs.some((t) => t.dtype !== dtype)) {
        return stock(args as never) as TensorInfo;
      }
      const axis = util.parseAxisParam(
        ((args.attrs ?? {}) as { axis: number }).axis,
        inputs[0].shape,
      )[0];
      const outShape = backend_util.computeOutShape(
        inputs.map((t) => t.shape),
        axis,
      );
      const out = allocFor(dtype as 'float32', sizeOf(outShape));
      const outer = sizeOf(outShape.slice(0, axis));
      const innerOut = sizeOf(outShape.slice(axis));
      const outStrides = stridesOf(outShape);
      let offset = 0;
      inputs.forEach((t, i) => {
        const v = values[i] as NumericArray;
        const inner = sizeOf(t.shape.slice(axis));
        if (canStride(addon, v, t.shape.length) && v.length > 0) {
          // input i lands at [.., offset along axis, ..] of the output, with the output's strides
          addon.stridedCopy(
            v as Float32Array,
            0,
            stridesOf(t.shape),
            out as Float32Array,
            offset,
            outStrides,
            Int32Array.from(t.shape),
          );
        } else {
          for (let o = 0; o < outer && inner > 0; o++)
            copyRun(v, o * inner, out, o * innerOut + offset, inner);
        }
        offset += inner;
      });
      return args.backend.makeTensorInfo(outShape, dtype, out);
    }),
};

export const copyOverrides: NativeKernelOverride[] = [sliceOverride, splitOverride, concatOverride];
