import type * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { type AttentionKernel, groupedQueryAttention } from '../layers/attention.js';
import { denseLinear, type LinearFactory, type ParamLookup } from '../layers/linear.js';
import { ropeInverseFrequencies } from '../layers/rotary.js';
import type { ParamMap } from './param-map.js';
import { ModelsError } from '../errors.js';

/**
 * Token embedding: ids [N] (int32) -> [N, H] from the model's parameters. The default gathers
 * rows of `model.embed_tokens.weight`; vocab parallelism passes a lookup in its vocabulary shard.
 */
export type EmbeddingFn = (ids: tf.Tensor1D, params: ParamLookup) => tf.Tensor2D;

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
  /** Replaces the embedding row gather of `forwardHidden` when set (e.g. vocab-parallel). */
  readonly embedding?: EmbeddingFn;
  /** RoPE inverse frequencies (float64), derived from the config. */
  readonly invFreq: Float64Array;
}

/** Options of `createDecoderModel`. */
export interface DecoderModelOptions {
  linear?: LinearFactory;
  attention?: AttentionKernel;
  embedding?: EmbeddingFn;
}

/** Wraps a config and its parameters (see `createParamMap` / `loadModel`) as a `DecoderModel`. */
export function createDecoderModel(config: ModelConfig, params: ParamMap, options: DecoderModelOptions = {}): DecoderModel {
  return {
    config,
    params,
    linear: options.linear ?? denseLinear,
    attention: options.attention ?? groupedQueryAttention,
    invFreq: ropeInverseFrequencies(config),
    ...(options.embedding ? { embedding: options.embedding } : {}),
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
