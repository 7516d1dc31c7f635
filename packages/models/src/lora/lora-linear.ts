import * as tf from '@tensorflow/tfjs-core';
import type { LinearFactory } from '../layers/linear.js';
import { loraAName, loraBName } from './lora-spec.js';

/**
 * Dropout on the adapters' inputs while gradients are taken (PEFT's `lora_dropout` in train
 * mode). `key` picks the masks: the trainer sets it per micro-batch, and each module's mask is
 * a function of it and the module's name only, so a recomputed layer's backward draws the same
 * mask as its forward and a resumed run the same masks as an unbroken one. Unset: no dropout.
 */
export interface LoraDropout {
  readonly rate: number;
  key?: number;
}

/** True while a gradient tape records (inside `tf.grads`/`variableGrads`, or a recomputed layer's backward). */
function recording(): boolean {
  return (tf.engine() as unknown as { state: { activeTape: unknown } }).state.activeTape != null;
}

/** 32-bit FNV-1a of a module name mixed with `key`: the seed of that module's dropout mask. */
function maskSeed(key: number, name: string): number {
  let h = (0x811c9dc5 ^ key) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** `x` with LoRA dropout applied when it is active (see {@link LoraDropout}). */
function dropped(x: tf.Tensor2D, name: string, dropout?: LoraDropout): tf.Tensor2D {
  if (!dropout || dropout.rate <= 0 || dropout.key === undefined || !recording()) return x;
  return tf.dropout(x, dropout.rate, undefined, maskSeed(dropout.key, name)) as tf.Tensor2D;
}

/**
 * Wraps `base` so that every module with adapter tensors in the parameters
 * (`<module>.lora_A.weight` [r, in], `<module>.lora_B.weight` [out, r]) computes
 * y = base(x) + scale * (dropout(x) A^T) B^T; other modules are `base` unchanged. A base layer
 * with `forwardWith` (tensor parallelism) adds the term inside: with A, B sharded as its weight.
 * The adapters are read from the lookup each layer gets, so recomputed layers see them.
 */
export function loraLinear(
  base: LinearFactory,
  scale: number,
  dropout?: LoraDropout,
): LinearFactory {
  return (name, params) => {
    const inner = base(name, params);
    const a = params.get(loraAName(name)) as tf.Tensor2D | undefined;
    const b = params.get(loraBName(name)) as tf.Tensor2D | undefined;
    if (!a || !b) return inner;
    const up = (x: tf.Tensor2D): tf.Tensor2D => {
      const low = tf.matMul(dropped(x, name, dropout), a, false, true); // [N, r]
      return tf.matMul(tf.mul(low, scale) as tf.Tensor2D, b, false, true); // [N, out]
    };
    const { forwardWith } = inner;
    return {
      name,
      // under tensor parallelism A and B are this rank's parts, added inside the sharded layer
      // the adapter's product before the base's: the gradient tape then sums the input's
      // gradients in the order earlier builds did, so their runs reproduce to the last bit
      forward: forwardWith
        ? (x) => forwardWith(x, up)
        : (x) => {
            const delta = up(x);
            return tf.add(inner.forward(x), delta) as tf.Tensor2D;
          },
    };
  };
}
