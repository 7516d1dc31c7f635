import type { FrozenMatrix } from '@rl2/engine';
import type * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { type AttentionKernel, groupedQueryAttention } from '../layers/attention.js';
import { denseLinear, type LinearFactory, type ParamLookup } from '../layers/linear.js';
import { ropeInverseFrequencies } from '../layers/rotary.js';
import type { ParamMap } from './param-map.js';
import { type FrozenWeights, frozenAwareLinear } from '../frozen/frozen-weights.js';
import type { TokenBatch } from './token-batch.js';
import { ModelsError } from '../errors.js';

/**
 * Token embedding: ids [N] (int32) -> [N, H] from the model's parameters. The default gathers
 * rows of `model.embed_tokens.weight`; vocab parallelism passes a lookup in its vocabulary shard.
 */
export type EmbeddingFn = (ids: tf.Tensor1D, params: ParamLookup) => tf.Tensor2D;

/**
 * This rank's share of a packed row under context parallelism: its tokens (and their targets),
 * the attention kernel that lets them see the rest of the row, and how per-token outputs come
 * back into row order.
 */
export interface RowShard {
  readonly batch: TokenBatch;
  /** Targets of this rank's tokens, when targets were given to the split. */
  readonly targets?: number[];
  readonly attention: AttentionKernel;
  /** This rank's per-token outputs [Nl] -> the whole row [N] in batch order, differentiable. */
  gather(local: tf.Tensor1D): tf.Tensor1D;
}

/** Splits a batch for context parallelism (see {@link RowShard}). */
export type RowSplitFn = (batch: TokenBatch, targets?: ArrayLike<number>) => RowShard;

/**
 * Log-probabilities of `targets` and entropies from final hidden states [N, H] and the head
 * weight this rank holds (e.g. a vocabulary shard under tensor parallelism; its 16-bit bits
 * when the model keeps its base frozen in 16 bits), logits divided by `temperature`.
 */
export type LogprobHeadFn = (
  hidden: tf.Tensor2D,
  headWeight: tf.Tensor2D | FrozenMatrix,
  targets: Int32Array,
  temperature: number,
) => { logprobs: tf.Tensor1D; entropy: tf.Tensor1D };

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
  /** Replaces the chunked log-prob head of `tokenLogprobs` when set (e.g. vocab-parallel). */
  readonly logprobHead?: LogprobHeadFn;
  /** When set, `tokenLogprobs` / `tokenValues` run this rank's share of each row (context parallelism). */
  readonly splitRow?: RowSplitFn;
  /**
   * When set, `tokenLogprobs` / `tokenValues` run each pass (forward and its backward) on the
   * model it returns: parameters fetched per pass, e.g. gathered from ZeRO-3 shards.
   */
  readonly forPass?: () => DecoderModel;
  /**
   * Frozen base matrices kept in 16 bits instead of parameters (a LoRA base loaded with
   * `frozenBase`): the default linear layers, the embedding lookup and the LM head read them.
   */
  readonly frozen?: FrozenWeights;
  /** RoPE inverse frequencies (float64), derived from the config. */
  readonly invFreq: Float64Array;
}

/** Options of `createDecoderModel`. */
export interface DecoderModelOptions {
  linear?: LinearFactory;
  attention?: AttentionKernel;
  embedding?: EmbeddingFn;
  logprobHead?: LogprobHeadFn;
  splitRow?: RowSplitFn;
  forPass?: () => DecoderModel;
  frozen?: FrozenWeights;
}

/** Wraps a config and its parameters (see `createParamMap` / `loadModel`) as a `DecoderModel`. */
export function createDecoderModel(
  config: ModelConfig,
  params: ParamMap,
  options: DecoderModelOptions = {},
): DecoderModel {
  return {
    config,
    params,
    linear: options.linear ?? (options.frozen ? frozenAwareLinear(options.frozen) : denseLinear),
    attention: options.attention ?? groupedQueryAttention,
    invFreq: ropeInverseFrequencies(config),
    ...(options.embedding ? { embedding: options.embedding } : {}),
    ...(options.logprobHead ? { logprobHead: options.logprobHead } : {}),
    ...(options.splitRow ? { splitRow: options.splitRow } : {}),
    ...(options.forPass ? { forPass: options.forPass } : {}),
    ...(options.frozen ? { frozen: options.frozen } : {}),
  };
}

/** The lm_head weight [V, H] (the embedding matrix when tied). */
export function lmHeadWeight(model: DecoderModel): tf.Tensor2D {
  const name = model.config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const w = model.params.get(name);
  if (!w)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `lmHeadWeight: ${model.config.architecture} has no "${name}"; a value model has no ` +
        `language-model head (load it with head: 'causal-lm')`,
    );
  return w as tf.Tensor2D;
}
