// Fused softmax cross-entropy from logits: one pass forward, one pass backward, and no
// [tokens, vocab] one-hot or exp/softmax intermediates kept for backprop. With an 8k
// vocabulary and 8k tokens each such intermediate is 256 MiB; the composite tfjs version
// (logSumExp - sum(logits * oneHot)) keeps about eight of them.
import {
  cast,
  engine,
  type GradConfig,
  getBackend,
  getKernel,
  greaterEqual,
  type KernelConfig,
  logSumExp,
  mul,
  oneHot,
  reshape,
  sub,
  sum,
  type Tensor,
  type TensorInfo,
  tidy,
  zerosLike,
} from '@tensorflow/tfjs-core';
import { EngineError } from './errors.js';
import { asKernelFunc, f32Values, i32Values, uninitF32 } from './kernels/native-kernel.js';
import type { NativeAddon } from './native-addon.js';

export const SOFTMAX_CROSS_ENTROPY = 'Rl2SoftmaxCrossEntropy';
export const SOFTMAX_CROSS_ENTROPY_GRAD = 'Rl2SoftmaxCrossEntropyGrad';

/**
 * Per-row cross-entropy `logsumexp(logits[i]) - logits[i, labels[i]]` (natural log), 0 where
 * the label is negative (masked positions, like PyTorch's ignore_index).
 * logits [..., V] float32, labels [...] int32 -> losses [...].
 * Fused on the `native` backend; the same maths from stock ops elsewhere.
 */
export function softmaxCrossEntropy(logits: Tensor, labels: Tensor): Tensor {
  const vocab = logits.shape[logits.shape.length - 1];
  const lead = logits.shape.slice(0, -1);
  if (
    labels.dtype !== 'int32' ||
    labels.shape.length !== lead.length ||
    labels.shape.some((d, i) => d !== lead[i])
  ) {
    throw new EngineError(
      'SHAPE_MISMATCH',
      `softmaxCrossEntropy: labels must be int32 of shape [${lead}] to match logits ` +
        `[${logits.shape}]; got ${labels.dtype} [${labels.shape}]`,
    );
  }
  return tidy(() => {
    const flat = reshape(logits, [-1, vocab]);
    const ids = reshape(labels, [-1]);
    if (getKernel(SOFTMAX_CROSS_ENTROPY, getBackend())) {
      return reshape(
        engine().runKernel(SOFTMAX_CROSS_ENTROPY, { logits: flat, labels: ids }, {}) as Tensor,
        lead,
      );
    }
    const picked = sum(mul(flat, oneHot(ids, vocab, 1, 0, 'float32')), -1);
    const valid = cast(greaterEqual(ids, 0), 'float32');
    return reshape(mul(sub(logSumExp(flat, -1), picked), valid), lead);
  });
}

/** d loss / d logits = dy (softmax(logits) - onehot(label)); labels get no gradient. */
export const softmaxCrossEntropyGradConfig: GradConfig = {
  kernelName: SOFTMAX_CROSS_ENTROPY,
  inputsToSave: ['logits', 'labels'],
  gradFunc: (dy, saved) => {
    const [logits, labels] = saved;
    return {
      logits: () =>
        engine().runKernel(
          SOFTMAX_CROSS_ENTROPY_GRAD,
          { logits, labels, dy: dy as Tensor },
          {},
        ) as Tensor,
      labels: () => zerosLike(labels),
    };
  },
};

/** The two fused kernels for `backendName` (a cpu-style backend), running on the addon. */
export function softmaxCrossEntropyKernels(
  addon: NativeAddon,
  backendName: string,
): KernelConfig[] {
  const forward = asKernelFunc(({ inputs, backend }) => {
    const { logits, labels } = inputs as { logits: TensorInfo; labels: TensorInfo };
    const x = f32Values(backend, logits);
    const ids = i32Values(backend, labels);
    if (!x || !ids)
      throw new Error(`${SOFTMAX_CROSS_ENTROPY}: needs float32 logits and int32 labels`);
    const [rows, cols] = logits.shape;
    const losses = uninitF32(rows);
    const bad = addon.xentForward(x, rows, cols, ids, losses);
    if (bad >= 0)
      throw new EngineError(
        'INVALID_ARGUMENT',
        `softmaxCrossEntropy: label ${ids[bad]} at row ${bad} is not below the vocabulary size ${cols}`,
      );
    return backend.makeTensorInfo([rows], 'float32', losses);
  });
  const backward = asKernelFunc(({ inputs, backend }) => {
    const { logits, labels, dy } = inputs as {
      logits: TensorInfo;
      labels: TensorInfo;
      dy: TensorInfo;
    };
    const x = f32Values(backend, logits);
    const ids = i32Values(backend, labels);
    const g = f32Values(backend, dy);
    if (!x || !ids || !g)
      throw new Error(`${SOFTMAX_CROSS_ENTROPY_GRAD}: needs float32 logits/dy and int32 labels`);
    const [rows, cols] = logits.shape;
    const dx = uninitF32(rows * cols);
    addon.xentBackward(x, rows, cols, ids, g, dx);
    return backend.makeTensorInfo([rows, cols], 'float32', dx);
  });
  return [
    { kernelName: SOFTMAX_CROSS_ENTROPY, backendName, kernelFunc: forward },
    { kernelName: SOFTMAX_CROSS_ENTROPY_GRAD, backendName, kernelFunc: backward },
  ];
}
