import * as tf from '@tensorflow/tfjs-core';
import type { HostTensor } from '../checkpoint/host-tensor.js';
import type { ModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import { paramShapes } from './param-shapes.js';
import type { FrozenWeights } from '../frozen/frozen-weights.js';

/** A model's trainable parameters by HF name; iterate it to build an optimizer or gradients. */
export type ParamMap = Map<string, tf.Variable>;

/** Checkpoint keys that carry no parameters (old RoPE buffers, duplicated tied heads). */
const IGNORED = /(^|\.)rotary_emb\.inv_freq$/;

/**
 * Turns host weights into `tf.Variable`s after checking every expected name and shape.
 * Missing or misshaped tensors throw naming them; `source` (a folder) goes in the message.
 * A `lm_head.weight` next to tied embeddings, and `score.*` missing from a causal-LM checkpoint
 * loaded as a value model, are the two tolerated mismatches (the latter gets a zero head).
 */
export function createParamMap(
  config: ModelConfig,
  weights: Map<string, HostTensor>,
  source = 'checkpoint',
  frozen?: FrozenWeights,
): ParamMap {
  const shapes = paramShapes(config);
  checkFrozenShapes(shapes, source, frozen);
  const missing = [...shapes.keys()].filter(
    (n) =>
      !weights.has(n) && !frozen?.has(n) && !(config.head === 'value' && n.startsWith('score.')),
  );
  if (missing.length > 0) {
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `${source}: missing ${missing.length} tensor(s) ` +
        `for ${config.architecture}: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}`,
    );
  }
  const unexpected = [...weights.keys()].filter(
    (n) =>
      !shapes.has(n) &&
      !IGNORED.test(n) &&
      !(n === 'lm_head.weight' && (config.tieWordEmbeddings || config.head === 'value')),
  );
  if (unexpected.length > 0) {
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `${source}: unexpected tensor(s) ` +
        `for ${config.architecture}: ${unexpected.slice(0, 5).join(', ')} (check ` +
        `"architectures" and the attention_bias/tie_word_embeddings keys of config.json)`,
    );
  }
  const params: ParamMap = new Map();
  for (const [name, shape] of shapes) {
    if (frozen?.has(name)) continue;
    const w = weights.get(name) ?? {
      shape,
      data: new Float32Array(shape.reduce((a, b) => a * b, 1)),
    };
    if (w.shape.join(',') !== shape.join(',')) {
      for (const v of params.values()) v.dispose();
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `${source}: tensor "${name}" has shape [${w.shape}], config.json implies [${shape}]`,
      );
    }
    const init = tf.tensor(w.data, shape);
    params.set(name, tf.variable(init, true)); // tfjs gives each variable a unique name
    init.dispose();
  }
  return params;
}

/** Throws naming the first frozen matrix whose shape config.json does not imply. */
function checkFrozenShapes(shapes: Map<string, number[]>, source: string, frozen?: FrozenWeights) {
  for (const [name, m] of frozen ?? []) {
    const shape = shapes.get(name);
    if (!shape || shape.join(',') !== m.shape.join(','))
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `${source}: tensor "${name}" has shape [${m.shape}], config.json implies ${shape ? `[${shape}]` : 'no such tensor'}`,
      );
  }
}

/** Copies parameters to host memory (float32), e.g. for saving. */
export async function paramsToHost(
  params: ReadonlyMap<string, tf.Tensor>,
): Promise<Map<string, HostTensor>> {
  const out = new Map<string, HostTensor>();
  for (const [name, t] of params)
    out.set(name, { shape: [...t.shape], data: (await t.data()) as Float32Array });
  return out;
}

/** Frees every parameter of a model. */
export function disposeParams(params: ParamMap): void {
  for (const v of params.values()) v.dispose();
}

/**
 * Copies new values into existing parameters by name (weight sync from a trainer to a
 * generator, or loading a checkpoint into a live model). Every name must exist with the same
 * shape; names absent from `values` keep their value.
 */
export function updateParams(
  params: ParamMap,
  values: ReadonlyMap<string, tf.Tensor | HostTensor>,
): void {
  for (const [name, v] of values) {
    const p = params.get(name);
    if (!p)
      throw new ModelsError(
        'CHECKPOINT_ERROR',
        `updateParams: the model has no parameter "${name}"`,
      );
    const shape = v instanceof tf.Tensor ? v.shape : v.shape;
    if (shape.join(',') !== p.shape.join(',')) {
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `updateParams: "${name}" has shape [${shape}], the model expects [${p.shape}]`,
      );
    }
  }
  for (const [name, v] of values) {
    tf.tidy(() =>
      params.get(name)!.assign(v instanceof tf.Tensor ? v : tf.tensor(v.data, v.shape)),
    );
  }
}
