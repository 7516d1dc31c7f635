import * as tf from '@tensorflow/tfjs-core';
import { decoderLayer, type LayerContext, layerParamNames } from './decoder-layer.js';
import type { ParamLookup } from './linear.js';
import { isLoraParam } from '../lora/lora-spec.js';
import { isFrozen } from '../lora/lora-model.js';

/**
 * How a recomputed layer can hold its parameters as something smaller than the tensors
 * themselves between its forward and its backward, e.g. a ZeRO-3 shard: `inputs` stand for
 * them (kept until the backward), `open(inputs)` gives the tensors for one run of the layer
 * (gathered in the forward, freed with its intermediates, gathered again in the backward).
 */
export interface LayerParamSource {
  inputs: tf.Tensor[];
  open(inputs: tf.Tensor[]): ParamLookup;
}

/** A parameter lookup that may hand recomputed layers a {@link LayerParamSource} for their parameters. */
export type SourcedParamLookup = ParamLookup & {
  layerSource?(names: string[]): LayerParamSource | undefined;
};

/**
 * Decoder layer with activation recomputation (gradient checkpointing, Chen et al. 2016,
 * https://arxiv.org/abs/1604.06174): the forward keeps only its inputs; the backward runs the
 * layer again under a tape and differentiates it. Memory per layer drops from all activations
 * to the layer input, for about one extra forward of compute.
 * Parameters, RoPE tables, the rotation matrix and the masks are passed as customGrad inputs so that they are kept
 * alive until the backward pass (closure tensors would be disposed after the forward). When
 * the lookup offers a {@link LayerParamSource}, its inputs are passed instead of the parameters.
 */
export function recomputedDecoderLayer(
  x: tf.Tensor2D,
  layer: number,
  p: SourcedParamLookup,
  ctx: LayerContext,
): tf.Tensor2D {
  const all = [...layerParamNames(ctx.config, layer), ...adapterNames(p, layer)];
  // frozen variables (a LoRA base) are no inputs: variables outlive the backward, and no
  // gradient is taken for them; nor are matrices a frozen base keeps in 16 bits (absent from p)
  const names = all.filter((n) => (p.get(n) !== undefined || p.layerSource) && !isFrozen(p.get(n)));
  const frozen = all.filter((n) => isFrozen(p.get(n)));
  const source = p.layerSource?.(all);
  const paramInputs = source ? source.inputs : names.map((n) => p.get(n)!);
  const maskLengths = ctx.segments ? [...ctx.segments.masks.keys()] : [];
  const constants: tf.Tensor[] = [
    ctx.cos,
    ctx.sin,
    ctx.rotate,
    ...(ctx.mask ? [ctx.mask] : []),
    ...(ctx.causalSegments ? [ctx.causalSegments] : []),
    ...(ctx.segments?.masks.values() ?? []),
  ];
  const run = (inputs: tf.Tensor[]): tf.Tensor2D => {
    const k = 1 + paramInputs.length;
    const local = source
      ? source.open(inputs.slice(1, k))
      : new Map<string, tf.Tensor>([
          ...names.map((n, i): [string, tf.Tensor] => [n, inputs[1 + i]!]),
          ...frozen.map((n): [string, tf.Tensor] => [n, p.get(n)!]),
        ]);
    const c: LayerContext = {
      ...ctx,
      cos: inputs[k] as tf.Tensor3D,
      sin: inputs[k + 1] as tf.Tensor3D,
      rotate: inputs[k + 2] as tf.Tensor2D,
    };
    let m = k + 3;
    if (ctx.mask) c.mask = inputs[m++] as tf.Tensor3D;
    if (ctx.causalSegments) c.causalSegments = inputs[m++] as tf.Tensor2D;
    if (ctx.segments) {
      c.segments = {
        lengths: ctx.segments.lengths,
        masks: new Map(maskLengths.map((l, i) => [l, inputs[m + i] as tf.Tensor3D])),
      };
    }
    return decoderLayer(inputs[0] as tf.Tensor2D, layer, local, c).x;
  };
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const inputs = args as tf.Tensor[];
    save(inputs);
    return {
      // tidy: the layer's intermediates (and gathered parameters) go as soon as its output exists
      value: tf.tidy(() => run(inputs)),
      // differentiate w.r.t. the layer input and parameters only; the constants (RoPE tables,
      // rotation, masks) get zeros (fused kernels may not use them at all)
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const k = 1 + paramInputs.length;
        const consts = saved.slice(k);
        const grads = nestedGrads(() =>
          tf.grads((...ins: tf.Tensor[]) => run([...ins, ...consts]))(saved.slice(0, k), dy),
        );
        return [...grads, ...consts.map((t) => tf.zerosLike(t))];
      },
    };
  });
  return f(x, ...paramInputs, ...constants) as tf.Tensor2D;
}

/**
 * Runs a `tf.grads` call inside an outer backward pass. tfjs 4.22 `Engine.gradients` replaces
 * the engine's active tape when a new top-level tape starts and sets it to null when done, so
 * the outer `gradients` call would crash on `activeTape.forEach` and leak its saved tensors.
 * Restoring the outer tape afterwards keeps both intact.
 */
function nestedGrads<T>(f: () => T): T {
  const state = (tf.engine() as unknown as { state: { activeTape: unknown } }).state;
  const outer = state.activeTape;
  try {
    return f();
  } finally {
    state.activeTape = outer;
  }
}

/** LoRA adapter tensors of layer `layer` in the lookup (`...lora_A.weight`, `...lora_B.weight`). */
function adapterNames(p: ParamLookup, layer: number): string[] {
  const pre = `model.layers.${layer}.`;
  return [...p.keys()].filter((n) => n.startsWith(pre) && isLoraParam(n));
}
