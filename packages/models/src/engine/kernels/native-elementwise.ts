// Elementwise float32 kernels in C: binary ops and comparisons with full numpy-style
// broadcasting (a stride of 0 per broadcast dim) and the unary ops of a transformer's forward
// and backward pass.
// Other dtypes (int32, bool, complex) and rank > 8 go to the stock kernels.
import { broadcast_util, type TensorInfo } from '@tensorflow/tfjs-core';
import { BinaryOp, CompareOp, UnaryOp } from '../native-addon.js';
import { asKernelFunc, f32Values, type NativeKernelOverride, sizeOf, uninitF32 } from './native-kernel.js';

const MAX_RANK = 8;

/** Element strides of `shape` read as the trailing dims of `outShape`; 0 where it broadcasts. */
export function broadcastStrides(shape: readonly number[], outShape: readonly number[]): Int32Array {
  const strides = new Int32Array(outShape.length);
  let stride = 1;
  for (let d = outShape.length - 1, s = shape.length - 1; d >= 0; d--, s--) {
    const dim = s >= 0 ? shape[s] : 1;
    strides[d] = dim === 1 && outShape[d] !== 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

function binaryOverride(kernelName: string, op: number): NativeKernelOverride {
  return {
    kernelName,
    make: (addon, stock) =>
      asKernelFunc((args) => {
        const { a, b } = args.inputs;
        const av = f32Values(args.backend, a);
        const bv = f32Values(args.backend, b);
        if (!a || !b || !av || !bv) return stock(args as never) as TensorInfo;
        const outShape = broadcast_util.assertAndGetBroadcastShape(a.shape, b.shape);
        if (outShape.length > MAX_RANK) return stock(args as never) as TensorInfo;
        const out = uninitF32(sizeOf(outShape));
        if (out.length > 0) {
          const shape = outShape.length === 0 ? [1] : outShape;
          addon.binary(op, av, broadcastStrides(a.shape, shape), bv, broadcastStrides(b.shape, shape), out, Int32Array.from(shape));
        }
        return args.backend.makeTensorInfo(outShape, 'float32', out);
      }),
  };
}

function compareOverride(kernelName: string, op: number): NativeKernelOverride {
  return {
    kernelName,
    make: (addon, stock) =>
      asKernelFunc((args) => {
        const { a, b } = args.inputs;
        const av = f32Values(args.backend, a);
        const bv = f32Values(args.backend, b);
        if (!a || !b || !av || !bv) return stock(args as never) as TensorInfo;
        const outShape = broadcast_util.assertAndGetBroadcastShape(a.shape, b.shape);
        if (outShape.length > MAX_RANK) return stock(args as never) as TensorInfo;
        const out = new Uint8Array(sizeOf(outShape));
        if (out.length > 0) {
          const shape = outShape.length === 0 ? [1] : outShape;
          addon.compare(op, av, broadcastStrides(a.shape, shape), bv, broadcastStrides(b.shape, shape), out, Int32Array.from(shape));
        }
        return args.backend.makeTensorInfo(outShape, 'bool', out);
      }),
  };
}

function unaryOverride(kernelName: string, op: number): NativeKernelOverride {
  return {
    kernelName,
    make: (addon, stock) =>
      asKernelFunc((args) => {
        const { x } = args.inputs;
        const xv = f32Values(args.backend, x);
        if (!x || !xv) return stock(args as never) as TensorInfo;
        const out = uninitF32(xv.length);
        addon.unary(op, xv, out);
        return args.backend.makeTensorInfo(x.shape, 'float32', out);
      }),
  };
}

export const elementwiseOverrides: NativeKernelOverride[] = [
  binaryOverride('Add', BinaryOp.add),
  binaryOverride('Sub', BinaryOp.sub),
  binaryOverride('Multiply', BinaryOp.mul),
  binaryOverride('RealDiv', BinaryOp.div),
  binaryOverride('Maximum', BinaryOp.max),
  binaryOverride('Minimum', BinaryOp.min),
  binaryOverride('SquaredDifference', BinaryOp.squaredDiff),
  binaryOverride('Pow', BinaryOp.pow),
  compareOverride('Equal', CompareOp.equal),
  compareOverride('NotEqual', CompareOp.notEqual),
  compareOverride('Greater', CompareOp.greater),
  compareOverride('GreaterEqual', CompareOp.greaterEqual),
  compareOverride('Less', CompareOp.less),
  compareOverride('LessEqual', CompareOp.lessEqual),
  unaryOverride('Exp', UnaryOp.exp),
  unaryOverride('Log', UnaryOp.log),
  unaryOverride('Neg', UnaryOp.neg),
  unaryOverride('Sqrt', UnaryOp.sqrt),
  unaryOverride('Rsqrt', UnaryOp.rsqrt),
  unaryOverride('Sigmoid', UnaryOp.sigmoid),
  unaryOverride('Square', UnaryOp.square),
  unaryOverride('Relu', UnaryOp.relu),
  unaryOverride('Tanh', UnaryOp.tanh),
  unaryOverride('Abs', UnaryOp.abs),
  unaryOverride('Reciprocal', UnaryOp.reciprocal),
];
