import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';

/**
 * Tied input embedding and LM head (Qwen3-0.6B, Qwen2.5-0.5B): left to autograd, the end of the
 * backward holds three [V, H] arrays until it returns (the head's dW, the lookup's dense
 * scatter, and their sum), 1.9 GB at Qwen3-0.6B's 151,936 x 1024. Instead the head reads the
 * table through an untracked tensor over the same buffer (`untrackedView`) and leaves its dW in
 * this slot; the lookup's gradient (`tiedEmbeddingLookup`, which runs later in the backward)
 * adds its rows into that very array and returns it as the table's only gradient: one [V, H].
 */
export interface TiedEmbeddingGrad {
  /** The head's dW [V, H] and its array, set by the head's backward, taken by the lookup's. */
  headGrad?: { tensor: tf.Tensor2D; values: Float32Array };
}

/**
 * A tensor over `w`'s own Float32Array, unknown to the tape (no copy); undefined on backends
 * whose buffers are not plain arrays (webgl, wasm), where the tied path is not taken.
 */
export function untrackedView(w: tf.Tensor2D): tf.Tensor2D | undefined {
  const values = untrackedValues(w);
  return values ? tf.tensor2d(values, w.shape) : undefined;
}

/** `t`'s own Float32Array on a cpu-style backend (no copy); undefined elsewhere. */
export function untrackedValues(t: tf.Tensor): Float32Array | undefined {
  const backend = tf.backend() as unknown as Partial<MathBackendCPU>;
  const values = backend.data?.get(t.dataId)?.values;
  return values instanceof Float32Array && values.length === t.size ? values : undefined;
}

/**
 * `tf.gather(table, ids)` whose gradient is the head's dW from `slot` with the lookup's rows
 * added in place (a dense scatter when the head left none).
 */
export function tiedEmbeddingLookup(
  table: tf.Tensor2D,
  ids: Int32Array,
  slot: TiedEmbeddingGrad,
): tf.Tensor2D {
  const [v, dim] = table.shape;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const t = args[0] as tf.Tensor2D;
    return {
      value: tf.tidy(() => tf.gather(t, tf.tensor1d(ids, 'int32')) as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor) => {
        const head = slot.headGrad;
        slot.headGrad = undefined;
        if (!head || head.tensor.isDisposed)
          return tf.tidy(() => tf.unsortedSegmentSum(dy, tf.tensor1d(ids, 'int32'), v));
        const g = dy.dataSync();
        const out = head.values;
        for (let i = 0; i < ids.length; i++) {
          const row = ids[i]! * dim;
          for (let j = 0; j < dim; j++) out[row + j]! += g[i * dim + j]!;
        }
        return head.tensor;
      },
    };
  });
  return f(table) as tf.Tensor2D;
}
