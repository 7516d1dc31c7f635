import * as tf from '@tensorflow/tfjs-core';
import { ModelsError } from '../errors.js';
import { type DecoderModel, lmHeadWeight } from '../model/decoder-model.js';
import { type ForwardOptions, forwardHidden } from '../model/forward-hidden.js';
import type { TokenBatch } from '../model/token-batch.js';
import { chunkedLogprobsEntropy } from './chunked-logprobs.js';
import { type TiedEmbeddingGrad, untrackedView } from './tied-embedding-grad.js';
import { isFrozen } from '../lora/lora-model.js';
import { frozenLinear, hasLogprobStats } from '@rl2/engine';
import { frozenHead } from '../frozen/frozen-weights.js';
import { frozenHeadLogprobs } from './frozen-head-logprobs.js';

/** Options of `tokenLogprobs`. */
export interface LogprobOptions extends ForwardOptions {
  /** Logits are divided by this before the softmax (the sampling temperature). Default 1. */
  temperature?: number;
  /**
   * Vocabulary chunk of the streamed logsumexp (memory is N x chunk). When the vocabulary fits in
   * one chunk its logits are kept for the backward instead of recomputed. Default: the whole
   * vocabulary on the native backend while N x V logits fit in `HEAD_LOGITS_BUDGET` floats (one
   * fused pass each way, no recomputed logits), else 8192.
   */
  vocabChunk?: number;
}

/**
 * Per-token log-probabilities of `targets` and the entropy of the (temperature-scaled)
 * next-token distribution: `logprobs` [N], `entropy` [N], float32, differentiable w.r.t.
 * `model.params`. `targets` [N] aligned with `batch.inputIds` (token t scores targets[t]).
 */
export function tokenLogprobs(
  passModel: DecoderModel,
  batch: TokenBatch,
  targets: ArrayLike<number>,
  options: LogprobOptions = {},
): { logprobs: tf.Tensor1D; entropy: tf.Tensor1D } {
  const model = passModel.forPass?.() ?? passModel;
  const n = batch.inputIds.length;
  if (targets.length !== n) {
    throw new ModelsError(
      'SHAPE_MISMATCH',
      `tokenLogprobs: ${targets.length} targets for ${n} input ids`,
    );
  }
  const temperature = options.temperature ?? 1;
  if (!(temperature > 0))
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `tokenLogprobs: temperature must be > 0, got ${temperature}`,
    );
  const tgt = Int32Array.from(targets);
  const v = model.config.vocabSize;
  const bad = tgt.findIndex((t) => t < 0 || t >= v);
  if (bad >= 0)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `tokenLogprobs: targets[${bad}] = ${tgt[bad]} is outside the vocabulary [0, ${v})`,
    );
  // context parallelism: this rank's tokens of the row, gathered back into row order at the end
  const shard = model.splitRow?.(batch, tgt);
  const run = shard ? { ...model, attention: shard.attention } : model;
  const localTargets = shard ? Int32Array.from(shard.targets ?? []) : tgt;
  const frozen = frozenHead(model.config, model.frozen);
  const chunk = options.vocabChunk ?? (frozen ? 8192 : defaultVocabChunk(localTargets.length, v));
  const both = tf.tidy(() => {
    if (frozen && !model.logprobHead) {
      const hidden = forwardHidden(run, shard?.batch ?? batch, options);
      return frozenHeadLogprobs(hidden, frozen, localTargets, temperature, chunk);
    }
    // tied embeddings over several vocabulary chunks: one [V, H] gradient array instead of three
    // a frozen head (LoRA's base) gets no dW: nothing to share with the embedding either
    const frozenHead = frozen !== undefined || isFrozen(lmHeadWeight(model));
    const plainTied =
      !frozenHead &&
      !model.logprobHead &&
      !model.embedding &&
      !shard &&
      model.config.tieWordEmbeddings &&
      (lmHeadWeight(model).shape[0] > chunk || hasLogprobStats());
    const view = plainTied ? untrackedView(lmHeadWeight(model)) : undefined;
    const tied: TiedEmbeddingGrad | undefined = view ? {} : undefined;
    const hidden = forwardHidden(run, shard?.batch ?? batch, options, tied);
    if (!model.logprobHead)
      return chunkedLogprobsEntropy(
        hidden,
        view ?? lmHeadWeight(model),
        localTargets,
        temperature,
        chunk,
        tied,
        !frozenHead,
      );
    const head = model.logprobHead(
      hidden,
      frozen ?? lmHeadWeight(model),
      localTargets,
      temperature,
    );
    return tf.stack([head.logprobs, head.entropy], 1) as tf.Tensor2D;
  });
  const [logprobs, entropy] = tf.tidy(() => {
    const [lp, ent] = tf.unstack(both, 1) as [tf.Tensor1D, tf.Tensor1D];
    return shard ? [shard.gather(lp), shard.gather(ent)] : [lp, ent];
  });
  both.dispose();
  return { logprobs, entropy };
}

/**
 * Logits the log-prob head may hold at once for the whole vocabulary (floats; 256 MiB, and as
 * much again for their gradient): Qwen3-0.6B's 151,936 rows up to 441 tokens.
 */
export const HEAD_LOGITS_BUDGET = 2 ** 26;

/** `tokenLogprobs`' default vocabulary chunk for `n` tokens over `v` rows (see `vocabChunk`). */
export function defaultVocabChunk(n: number, v: number): number {
  return hasLogprobStats() && n * v <= HEAD_LOGITS_BUDGET ? v : 8192;
}

/** Full logits [N, V] (float32) of a causal-LM model; for inspection and tests. */
export function tokenLogits(
  model: DecoderModel,
  batch: TokenBatch,
  options: ForwardOptions = {},
): tf.Tensor2D {
  const frozen = frozenHead(model.config, model.frozen);
  return tf.tidy(() => {
    const hidden = forwardHidden(model, batch, options);
    return frozen
      ? frozenLinear(hidden, frozen)
      : tf.matMul(hidden, lmHeadWeight(model), false, true);
  });
}
