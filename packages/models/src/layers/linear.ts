import * as tf from '@tensorflow/tfjs-core';
import { ModelsError } from '../errors.js';

/** Named parameter tensors of one model (HF names, e.g. `model.layers.0.self_attn.q_proj.weight`). */
export type ParamLookup = ReadonlyMap<string, tf.Tensor>;

/**
 * A linear layer over flattened tokens: `x` [N, in] -> [N, out]. Tensor parallelism replaces
 * it (column-parallel q/k/v/gate/up, row-parallel o/down) by passing its own `LinearFactory`.
 */
export interface Linear {
  readonly name: string;
  forward(x: tf.Tensor2D): tf.Tensor2D;
  /**
   * `forward(x)` with `extra` of the input this rank's own product reads added before any
   * reduction over ranks: a tensor-parallel layer's (the replicated input of a column-parallel
   * one, this rank's input slice of a row-parallel one). LoRA adds its s B A x through it
   * (see `loraLinear`); without it, `forward(x) + extra(x)`.
   */
  forwardWith?(x: tf.Tensor2D, extra: (local: tf.Tensor2D) => tf.Tensor2D): tf.Tensor2D;
}

/** Builds the `Linear` for the HF module `name` (e.g. `model.layers.3.mlp.up_proj`) from `params`. */
export type LinearFactory = (name: string, params: ParamLookup) => Linear;

/**
 * Dense `y = x W^T + b` with the HF/PyTorch layout W [out, in]. Inputs are always 2D:
 * matMul(3D, 2D) has a wrong-shaped gradient in tfjs 4.22.
 */
export const denseLinear: LinearFactory = (name, params) => {
  const weight = params.get(`${name}.weight`);
  if (!weight)
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `denseLinear: parameter "${name}.weight" is missing from the model's parameters`,
    );
  const bias = params.get(`${name}.bias`);
  return {
    name,
    forward: (x) => {
      const y: tf.Tensor2D = tf.matMul(x, weight as tf.Tensor2D, false, true);
      return bias ? (tf.add(y, bias) as tf.Tensor2D) : y;
    },
  };
};
