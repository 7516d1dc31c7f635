// Elementwise float32 kernels in C: binary ops and comparisons with full numpy-style
// broadcasting (a stride of 0 per broadcast dim) and the unary ops of a transformer's forward
// and backward pass.
// Other dtypes (int32, bool, complex) and rank > 8 go to the stock kernels.
import { broadcast_util, type TensorInfo } from '@tensorflow/tfjs-core';
import { BinaryOp, CompareOp, UnaryOp } from '../native-addon.js';
import {
  asKernelFunc,
  f32Values,
  type NativeKernelOverride,
  sizeOf,
  uninitF32,
} from './native-kernel.js';

const MAX_RANK = 8;

/** Element strides of `shape` read as the trailing dims of `outShape`; 0 where it broadcasts. */
export function broadcastStrides(
  shape: readonly number[],
  outShape: readonly number[],
): Int32Array {
  const strides = new Int32Array(outShape.length);
  let stride = 1;
  for (let d = outShape.length - 1, s = shape.length - 1; d >= 0; d--, s--) {
    const dim = s >= 0 ? shape[s] : 1;
    strides[d] = dim === 1 && outShape[d] !== 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

/**
 * A broadcasting binary kernel over two float32 inputs: `bool` output for comparisons
 * (addon.compare), float32 otherwise (addon.binary).
 */
function broadcastOverride(
  kernelName: string,
  op: number,
  out: 'float32' | 'bool',
): NativeKernelOverride {
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
        const size = sizeOf(outShape);
        const values = out === 'bool' ? new Uint8Array(size) : uninitF32(size);
        if (size > 0) {
          const shape = outShape.length === 0 ? [1] : outShape;
          const [sa, sb, dims] = [
            broadcastStrides(a.shape, shape),
            broadcastStrides(b.shape, shape),
            Int32Array.from(shape),
          ];
          if (values instanceof Uint8Array) addon.compare(op, av, sa, bv, sb, values, dims);
          else addon.binary(op, av, sa, bv, sb, values, dims);
        }
        return args.backend.makeTensorInfo(outShape, out, values);
      }),
  };
}

const binaryOverride = (kernelName: string, op: number) =>
  broadcastOverride(kernelName, op, 'float32');
const compareOverride = (kernelName: string, op: number) =>
  broadcastOverride(kernelName, op, 'bool');

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
