import type * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { type AttentionKernel, groupedQueryAttention } from '../layers/attention.js';
import { denseLinear, type LinearFactory } from '../layers/linear.js';
import { ropeInverseFrequencies } from '../layers/rotary.js';
import type { ParamMap } from './param-map.js';
import { ModelsError } from '../errors.js';

/**
 * A Llama/Qwen decoder: its config, its parameters by HF name and the replaceable pieces
 * (linear layers, attention kernel) that tensor/context parallelism swap for sharded ones.
 * Holds no other state: every forward is a function of these fields and its inputs.
 */
export interface DecoderModel {
  readonly config: ModelConfig;
  readonly params: ParamMap;
  readonly linear: LinearFactory;
  readonly attention: AttentionKernel;
  /** RoPE inverse frequencies (float64), derived from the config. */
  readonly invFreq: Float64Array;
}

/** Options of `createDecoderModel`. */
export interface DecoderModelOptions {
  linear?: LinearFactory;
  attention?: AttentionKernel;
}

/** Wraps a config and its parameters (see `createParamMap` / `loadModel`) as a `DecoderModel`. */
export function createDecoderModel(config: ModelConfig, params: ParamMap, options: DecoderModelOptions = {}): DecoderModel {
  return {
    config,
    params,
    linear: options.linear ?? denseLinear,
    attention: options.attention ?? groupedQueryAttention,
    invFreq: ropeInverseFrequencies(config),
  };
}

/** The lm_head weight [V, H] (the embedding matrix when tied). */
export function lmHeadWeight(model: DecoderModel): tf.Tensor2D {
  const name = model.config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const w = model.params.get(name);
  if (!w) throw new ModelsError(
      'INVALID_ARGUMENT',
      `lmHeadWeight: ${model.config.architecture} has no "${name}"; a value model has no language-model head (load it with head: 'causal-lm')`,
    );
  return w as tf.Tensor2D;
}
