import { createDecoderModel, type DecoderModel, type ParamMap } from '@rl2/models';
import { type FlatParamLayout, type ProcessGroup, Zero3Params } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import type { AdamW, AdamWState } from '../optim/adamw.js';
import { gradNorm, type NamedGrads } from '../optim/clip-grad-norm.js';
import { TrainersError } from '../errors.js';
import type { RankLayout } from './rank-layout.js';
import {
  fullOptimizerState,
  fullParams,
  isTensorParallelPartial,
  localOptimizerState,
  parallelDecoder,
  tensorParallelNorm,
} from './tensor-parallel-decoder.js';

/**
 * A model as one rank trains it under a {@link RankLayout}: what the objectives compute with,
 * what the optimizer updates, and how to get full HF tensors and optimizer state back.
 */
export interface TrainedModel {
  /** What objectives run: tp shards and cp split (see `parallelDecoder`); under FSDP parameters gathered per pass. */
  readonly model: DecoderModel;
  /** What AdamW updates: the model's variables (full or tp shards), or ZeRO-3 flat shards by unit. */
  readonly params: Readonly<Record<string, tf.Variable>>;
  /**
   * ZeRO-3 (`ddp_size` set): gradients come out of the backward already summed over the ranks
   * holding the same shards, and every data-parallel rank must run the same passes (idle ones
   * included) in the same order.
   */
  readonly sharded: boolean;
  /** Full HF tensors (a collective over tp and fsdp); `dispose` frees what was gathered. */
  fullParams(): { params: ParamMap; dispose(): void };
  /** AdamW state of `params` -> per-tensor full moments, as checkpoints hold them (a collective). */
  fullOptimizerState(state: AdamWState): AdamWState;
  /** A checkpoint's per-tensor full moments -> the state of `params` (no communication). */
  localOptimizerState(state: AdamWState): AdamWState;
  /** The global L2 norm of gradients of `params` after the step's reductions (a collective). */
  gradNorm(grads: NamedGrads): number | Promise<number>;
  /**
   * Before the passes (after construction; `layoutStep` does it per step): on a device backend
   * under ZeRO-3 the shards are read and gathered here, outside the passes (a collective).
   */
  ready(): Promise<void>;
  /** After the step's passes: on a device backend under ZeRO-3, the kept unit gradients reduce-scattered into `grads`. */
  settleGrads(grads: NamedGrads): Promise<NamedGrads>;
  /** The parameters changed (after an optimizer step). */
  afterStep(): void;
  /** Frees the parameters this rank holds (not the loaded ones kept with `keepFull`). */
  dispose(): void;
}

/**
 * The optimizer state as a checkpoint holds it, on world rank 0 (`isMain`). Under tp or ZeRO-3
 * every rank joins the gathers and the others get undefined; otherwise only rank 0 copies it out.
 */
export async function checkpointOptimizerState(
  trained: TrainedModel,
  optimizer: Pick<AdamW, 'state'>,
  layout: RankLayout,
  isMain: boolean,
): Promise<AdamWState | undefined> {
  if (!trained.sharded && !layout.tp && !isMain) return undefined;
  const state = trained.fullOptimizerState(await optimizer.state());
  return isMain ? state : undefined;
}

/** FSDP unit of an HF parameter name: one per decoder layer, the rest by top-level module. */
export function decoderUnitOf(name: string): string {
  return /^model\.layers\.\d+/.exec(name)?.[0] ?? name.split('.').slice(0, 2).join('.');
}

/** ZeRO-3's hook before a unit's gradient is reduce-scattered: tp-partial tensors summed over tp. */
function sumPartialsOverTp(tp: ProcessGroup | undefined) {
  if (!tp) return undefined;
  return (flat: Float32Array, layout: FlatParamLayout) => {
    layout.names.forEach((name, k) => {
      if (!isTensorParallelPartial(name)) return;
      const at = layout.offsets[k] as number;
      const size = (layout.shapes[k] as number[]).reduce((a, b) => a * b, 1);
      flat.set(tp.allReduce(flat.slice(at, at + size), 'sum'), at);
    });
  };
}

/**
 * Lays a loaded model out on this rank: tensor and context parallelism (`parallelDecoder`),
 * then, when the layout has FSDP groups, ZeRO-3 (@rl2/parallel `Zero3Params`, one unit per
 * decoder layer): the model keeps only its flat shards and gathers each unit when a pass reads
 * it. The loaded parameters are disposed unless `keepFull` (PPO generates with them).
 */
export function trainModel(
  loaded: DecoderModel,
  layout: RankLayout,
  key: string,
  options: { keepFull?: boolean } = {},
): TrainedModel {
  const { tp } = layout;
  const model = parallelDecoder(loaded, layout, key, options);
  const norm = tensorParallelNorm(tp);
  if (!layout.fsdp) {
    const params = Object.fromEntries(model.params);
    return {
      model,
      params,
      sharded: false,
      fullParams: () => fullParams(params, tp),
      fullOptimizerState: (s) => fullOptimizerState(s, tp),
      localOptimizerState: (s) => localOptimizerState(s, tp),
      gradNorm: (grads) => gradNorm(grads, norm),
      ready: async () => {},
      settleGrads: async (grads) => grads,
      afterStep: () => {},
      // with keepFull and no tp the model's variables are the loaded ones, kept for the caller
      dispose: () => (options.keepFull && !tp ? undefined : tf.dispose(Object.values(params))),
    };
  }
  const zero3 = zero3Of(model.params, layout);
  // the tp shards were made for this; the loaded full tensors stay only when asked to
  if (tp || !options.keepFull) for (const v of model.params.values()) v.dispose();
  return zero3TrainedModel(zero3, tp, (lookup, forPass) =>
    createDecoderModel(model.config, lookup, {
      ...hooksOf(model),
      ...(forPass ? { forPass } : {}),
    }),
  );
}

/** ZeRO-3 units (one per decoder layer, see {@link decoderUnitOf}) of `params` over the layout's FSDP groups. */
export function zero3Of(params: ReadonlyMap<string, tf.Tensor>, layout: RankLayout): Zero3Params {
  if (!layout.fsdp)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      'zero3Of: the layout has no FSDP groups (ddp_size unset)',
    );
  return Zero3Params.fromFull(params, layout.fsdp, decoderUnitOf, {
    beforeReduce: sumPartialsOverTp(layout.tp),
  });
}

/** A model's hooks (linear layers, attention, embedding, head, cp split, 16-bit base) for another parameter lookup. */
export function hooksOf(model: DecoderModel) {
  return {
    linear: model.linear,
    attention: model.attention,
    ...(model.embedding ? { embedding: model.embedding } : {}),
    ...(model.logprobHead ? { logprobHead: model.logprobHead } : {}),
    ...(model.splitRow ? { splitRow: model.splitRow } : {}),
    ...(model.frozen ? { frozen: model.frozen } : {}),
  };
}

/**
 * The trained model of ZeRO-3 shards `zero3` (holding tp shards under `tp`): `modelOf` builds
 * the model reading a lookup; each pass gets a fresh one (`forPass`) whose units are gathered
 * as it reads them. Optimizer state, gradient norms and full tensors go through the units.
 */
export function zero3TrainedModel(
  zero3: Zero3Params,
  tp: ProcessGroup | undefined,
  modelOf: (lookup: ParamMap, forPass?: () => DecoderModel) => DecoderModel,
): TrainedModel {
  const passModel = () => modelOf(zero3.passLookup() as ParamMap);
  const norm = tensorParallelNorm(tp);
  return {
    model: modelOf(zero3.passLookup() as ParamMap, passModel),
    params: zero3.shards,
    sharded: true,
    fullParams: () => {
      const gathered = zero3.gatherAll();
      if (!tp)
        return { params: gathered as ParamMap, dispose: () => tf.dispose([...gathered.values()]) };
      const full = fullParams(Object.fromEntries(gathered), tp);
      tf.dispose([...gathered.values()]);
      return full;
    },
    fullOptimizerState: (s) => zero3FullOptimizerState(zero3, s, tp),
    localOptimizerState: (s) => zero3LocalOptimizerState(zero3, s, tp),
    gradNorm: (grads) => zero3.gradNorm(grads, norm),
    ready: () => zero3.refresh(),
    settleGrads: (grads) => zero3.settleGrads(grads),
    afterStep: () => zero3.invalidate(),
    dispose: () => tf.dispose(Object.values(zero3.shards)),
  };
}

/** AdamW state of ZeRO-3 unit shards -> per-tensor full moments (collectives over fsdp and tp). */
function zero3FullOptimizerState(
  zero3: Zero3Params,
  s: AdamWState,
  tp: ProcessGroup | undefined,
): AdamWState {
  const moment = (key: 'm' | 'v') =>
    zero3.gatherShardValues(
      Object.fromEntries(Object.entries(s.moments).map(([unit, x]) => [unit, x[key]])),
    );
  const m = moment('m');
  const v = moment('v');
  const moments = Object.fromEntries(
    Object.entries(m).map(([name, x]) => [
      name,
      { shape: x.shape, m: x.data, v: (v[name] as { data: Float32Array }).data },
    ]),
  );
  return fullOptimizerState({ step: s.step, moments }, tp);
}

/** Per-tensor full moments -> this rank's unit shards of them (no communication). */
function zero3LocalOptimizerState(
  zero3: Zero3Params,
  s: AdamWState,
  tp: ProcessGroup | undefined,
): AdamWState {
  const local = localOptimizerState(s, tp);
  const pick = (key: 'm' | 'v') =>
    zero3.shardValues(
      Object.fromEntries(Object.entries(local.moments).map(([name, x]) => [name, x[key]])),
    );
  const m = pick('m');
  const v = pick('v');
  return {
    step: s.step,
    moments: Object.fromEntries(
      Object.entries(m).map(([unit, x]) => [
        unit,
        { shape: [x.length], m: x, v: v[unit] as Float32Array },
      ]),
    ),
  };
}
