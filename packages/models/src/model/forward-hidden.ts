import * as tf from '@tensorflow/tfjs-core';
import { hasFlashAttention } from '@rl2/engine';
import {
  causalMask,
  contiguousSegments,
  groupedQueryAttention,
  packedCausalMask,
} from '../layers/attention.js';
import { decoderLayer, type LayerContext } from '../layers/decoder-layer.js';
import { recomputedDecoderLayer } from '../layers/recomputed-layer.js';
import { type TiedEmbeddingGrad, tiedEmbeddingLookup } from '../heads/tied-embedding-grad.js';
import { rmsNorm } from '../layers/rms-norm.js';
import { ropeTables, rotateHalfMatrix } from '../layers/rotary.js';
import type { DecoderModel } from './decoder-model.js';
import { EMBED_NAME, frozenRowsGather } from '../frozen/frozen-weights.js';
import { resolveBatch, type TokenBatch } from './token-batch.js';

/** Options of a training/scoring forward. */
export interface ForwardOptions {
  /** Recompute each layer's activations in the backward pass instead of keeping them. */
  recompute?: boolean;
}

/**
 * Final hidden states [N, H] (after the last RMSNorm) for N = rows*T tokens, differentiable
 * w.r.t. `model.params`. Attention is block-diagonal causal over `segmentIds`. `tied`: the
 * embedding lookup's gradient goes into the tied LM head's (see tied-embedding-grad.ts).
 */
export function forwardHidden(
  model: DecoderModel,
  batch: TokenBatch,
  options: ForwardOptions = {},
  tied?: TiedEmbeddingGrad,
): tf.Tensor2D {
  const c = model.config;
  const { rows, segmentIds } = resolveBatch(batch);
  return tf.tidy(() => {
    const ids = tf.tensor1d(Int32Array.from(batch.inputIds), 'int32');
    const { cos, sin } = ropeTables(batch.positionIds, model.invFreq);
    const ctx: LayerContext = {
      config: c,
      linear: model.linear,
      attention: model.attention,
      rows,
      cos,
      sin,
      rotate: rotateHalfMatrix(c.headDim),
    };
    // the default kernel: tiled causal attention within segments where the backend has it (no
    // T x T mask or scores); else one packed row of several sequences attends per sequence
    // instead of over a T x T mask. A replaced kernel (e.g. context parallelism) always sees
    // the whole row and its mask.
    const flash = model.attention === groupedQueryAttention && hasFlashAttention();
    const lengths =
      !flash && rows === 1 && model.attention === groupedQueryAttention
        ? contiguousSegments(segmentIds)
        : undefined;
    if (flash)
      ctx.causalSegments = tf.tensor2d(
        Int32Array.from(segmentIds),
        [rows, segmentIds.length / rows],
        'int32',
      );
    else if (lengths)
      ctx.segments = {
        lengths,
        masks: new Map([...new Set(lengths)].map((l) => [l, causalMask(l)])),
      };
    else ctx.mask = packedCausalMask(segmentIds, rows);
    const table = model.params.get('model.embed_tokens.weight')!;
    const frozenTable = model.frozen?.get(EMBED_NAME);
    let x = model.embedding
      ? model.embedding(ids, model.params)
      : frozenTable
        ? frozenRowsGather(frozenTable, batch.inputIds)
        : tied
          ? tiedEmbeddingLookup(table as tf.Tensor2D, Int32Array.from(batch.inputIds), tied)
          : (tf.gather(table, ids) as tf.Tensor2D);
    for (let i = 0; i < c.numLayers; i++) {
      x = options.recompute
        ? recomputedDecoderLayer(x, i, model.params, ctx)
        : decoderLayer(x, i, model.params, ctx).x;
    }
    return rmsNorm(x, model.params.get('model.norm.weight')!, c.rmsNormEps);
  });
}
