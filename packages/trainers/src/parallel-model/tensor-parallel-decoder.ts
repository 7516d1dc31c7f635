import { frozenLinear, readValuesNow } from '@rl2/engine';
import {
  createDecoderModel,
  type DecoderModel,
  type DecoderModelOptions,
  type FrozenWeights,
  type ModelConfig,
  type ParamLookup,
  type ParamMap,
} from '@rl2/models';
import {
  checkTensorParallelSizes,
  copyToTensorParallel,
  type FsdpNormOptions,
  gatherTensorParallel,
  type ProcessGroup,
  shardForTensorParallel,
  shardFrozenForTensorParallel,
  tensorParallelAxis,
  tensorParallelLinearFactory,
  tensorParallelRole,
  vocabParallelEmbedding,
  vocabParallelLogprobs,
} from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { TrainersError } from '../errors.js';
import type { AdamWState } from '../optim/adamw.js';
import type { NamedGrads } from '../optim/clip-grad-norm.js';
import { contextParallelSplit } from './context-split.js';
import { frozenVocabParallelEmbedding } from './frozen-vocab-embedding.js';
import type { RankLayout } from './rank-layout.js';

/** The sizes tensor parallelism splits, checked against tp; the error names the config key to change. */
export function checkTensorParallel(config: ModelConfig, tp: number, key: string): void {
  try {
    checkTensorParallelSizes(config, tp);
  } catch (err) {
    throw new TrainersError('INVALID_ARGUMENT', `${key}.tp_size=${tp}: ${(err as Error).message}`);
  }
}

/**
 * The model this rank computes with under `layout` (the full model when there is no tp or cp):
 * - TP: its Megatron shard of every projection (column q/k/v/gate/up, row o/down), the
 *   embedding and LM head split by vocabulary (lookup summed over tp; log-probs and entropy
 *   from a cross-shard logsumexp), norms and the value head whole, in new variables. The full
 *   model's parameters are disposed unless `keepFull` (PPO generates with the full model).
 *   A base kept in 16 bits (`model.frozen`, LoRA) is split the same way and stays 16-bit.
 * - CP: each packed row split zigzag over the cp ranks (see `contextParallelSplit`).
 */
export function parallelDecoder(
  model: DecoderModel,
  layout: RankLayout,
  key: string,
  options: { keepFull?: boolean } = {},
): DecoderModel {
  const { tp, cp } = layout;
  if (!tp && !cp) return model;
  let params: ParamMap = model.params;
  if (tp) {
    checkTensorParallel(model.config, tp.size, key);
    const shards = shardForTensorParallel(model.params, tp);
    params = new Map(
      [...shards].map(([n, t]) => [
        n,
        tf.variable(t, (model.params.get(n) as tf.Variable).trainable),
      ]),
    );
    const originals = new Set<tf.Tensor>(model.params.values()); // tensors kept whole are the originals
    tf.dispose([...shards.values()].filter((t) => !originals.has(t)));
    if (!options.keepFull) tf.dispose([...originals]);
  }
  // the full 16-bit matrices are freed with `model` unless kept: then the row shards are views
  const frozen =
    tp && model.frozen
      ? shardFrozenForTensorParallel(model.frozen, tp, { view: options.keepFull === true })
      : undefined;
  return createDecoderModel(model.config, params, {
    ...(tp ? tensorParallelHooks(model.config, tp, frozen) : {}),
    ...(frozen ? { frozen } : {}),
    ...(cp ? { splitRow: contextParallelSplit(cp) } : {}),
  });
}

/** The linear layers, embedding and log-prob head of a tp shard (of a 16-bit base's shards too). */
function tensorParallelHooks(
  config: ModelConfig,
  tp: ProcessGroup,
  frozen: FrozenWeights | undefined,
): DecoderModelOptions {
  const vocab = config.vocabSize;
  const frozenTable = frozen?.get('model.embed_tokens.weight');
  return {
    linear: tensorParallelLinearFactory(tp, frozen),
    embedding: (ids: tf.Tensor1D, p: ParamLookup) =>
      frozenTable
        ? frozenVocabParallelEmbedding(ids, frozenTable, vocab, tp)
        : vocabParallelEmbedding(ids, p.get('model.embed_tokens.weight') as tf.Tensor2D, vocab, tp),
    logprobHead: (hidden, weight, targets, temperature) => {
      // f: every rank's vocabulary shard adds to the hidden states' gradient
      const h = copyToTensorParallel(hidden, tp);
      const logits =
        weight instanceof tf.Tensor
          ? (tf.matMul(h, weight, false, true) as tf.Tensor2D)
          : frozenLinear(h, weight);
      return vocabParallelLogprobs(
        temperature === 1 ? logits : (tf.div(logits, temperature) as tf.Tensor2D),
        tf.tensor1d(targets, 'int32'),
        vocab,
        tp,
      );
    },
  };
}

/**
 * Full parameters from this rank's tp shards (a collective over tp: every tp rank calls it),
 * for saving HF checkpoints and for generation. Without tp, the parameters themselves.
 * `dispose` frees what was gathered.
 */
export function fullParams(
  params: Readonly<Record<string, tf.Tensor>>,
  tp: ProcessGroup | undefined,
): { params: ParamMap; dispose(): void } {
  if (!tp) return { params: new Map(Object.entries(params)) as ParamMap, dispose: () => {} };
  const gathered = new Map<string, tf.Tensor>();
  for (const [name, t] of Object.entries(params)) {
    const full = gatherTensorParallel(name, readValuesNow(t) as Float32Array, t.shape, tp);
    gathered.set(name, tf.tensor(full.data, full.shape));
  }
  return { params: gathered as ParamMap, dispose: () => tf.dispose([...gathered.values()]) };
}

/** AdamW moments of this rank's shards -> moments of the full tensors (collective over tp), for checkpoints. */
export function fullOptimizerState(state: AdamWState, tp: ProcessGroup | undefined): AdamWState {
  if (!tp) return state;
  const moments: AdamWState['moments'] = {};
  for (const [name, s] of Object.entries(state.moments).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  )) {
    const m = gatherTensorParallel(name, s.m, s.shape, tp);
    moments[name] = {
      shape: m.shape,
      m: m.data,
      v: gatherTensorParallel(name, s.v, s.shape, tp).data,
    };
  }
  return { step: state.step, moments };
}

/** A checkpoint's full AdamW moments -> this rank's shards (no communication). */
export function localOptimizerState(state: AdamWState, tp: ProcessGroup | undefined): AdamWState {
  if (!tp) return state;
  const moments: AdamWState['moments'] = {};
  for (const [name, s] of Object.entries(state.moments)) {
    const shard = (data: Float32Array) =>
      tf.tidy(
        () =>
          shardForTensorParallel(new Map([[name, tf.tensor(data, s.shape)]]), tp).get(
            name,
          ) as tf.Tensor,
      );
    const m = shard(s.m);
    const v = shard(s.v);
    moments[name] = {
      shape: m.shape,
      m: readValuesNow(m) as Float32Array,
      v: readValuesNow(v) as Float32Array,
    };
    tf.dispose([m, v]);
  }
  return { step: state.step, moments };
}

/**
 * Parameters whose gradient each tp rank only holds a part of: Qwen3's q/k norms, applied per
 * local head, and the LoRA factors held whole inside a sharded layer (a column layer's A, a row
 * layer's B: @rl2/parallel `tensorParallelLinearFactory`'s `forwardWith`).
 */
export const isTensorParallelPartial = (name: string) =>
  /\.(q_norm|k_norm)\.weight$/.test(name) ||
  (/\.lora_[AB]\.weight$/.test(name) &&
    tensorParallelAxis(name) === undefined &&
    tensorParallelRole(name.replace(/\.lora_[AB]\.weight$/, '')) !== 'replicated');

/** Sums the partial gradients (see {@link isTensorParallelPartial}) over tp, in place of the inputs. */
export function reduceTensorParallelPartials(
  grads: NamedGrads,
  tp: ProcessGroup | undefined,
): void {
  if (!tp) return;
  for (const name of Object.keys(grads).filter(isTensorParallelPartial).sort()) {
    const g = grads[name] as tf.Tensor;
    grads[name] = tf.tensor(tp.allReduce(Float32Array.from(readValuesNow(g)), 'sum'), g.shape);
    g.dispose();
  }
}

/**
 * How the global gradient norm adds up under tp: squares of tp-sharded tensors summed over the
 * tp ranks, tensors every tp rank holds whole counted once (weight 1/tp). Empty without tp.
 */
export function tensorParallelNorm(tp: ProcessGroup | undefined): FsdpNormOptions {
  if (!tp) return {};
  return {
    weightOf: (name) => (tensorParallelAxis(name) === undefined ? 1 / tp.size : 1),
    across: tp,
  };
}
