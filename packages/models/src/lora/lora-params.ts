import { SeededRng } from '@rl2/data';
import * as tf from '@tensorflow/tfjs-core';
import type { HostTensor } from '../checkpoint/host-tensor.js';
import type { ModelConfig } from '../config/model-config.js';
import type { ParamMap } from '../model/param-map.js';
import { type LoraSpec, loraAName, loraBName, loraModules } from './lora-spec.js';

/**
 * New adapters for `config` as PEFT initialises them (`init_lora_weights=True`): lora_A
 * kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in)) (gain sqrt(2/(1+a^2)) times
 * sqrt(3/fan_in)), lora_B zeros, so the adapted model starts equal to its base. Seeded: the
 * same seed gives the same adapters.
 */
export function initLoraParams(config: ModelConfig, spec: LoraSpec, seed: number): ParamMap {
  const rng = new SeededRng(seed);
  const params: ParamMap = new Map();
  for (const m of loraModules(config, spec)) {
    const bound = 1 / Math.sqrt(m.in);
    const a = new Float32Array(spec.rank * m.in);
    for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
    params.set(loraAName(m.module), variableOf(tf.tensor2d(a, [spec.rank, m.in])));
    params.set(loraBName(m.module), variableOf(tf.zeros([m.out, spec.rank])));
  }
  return params;
}

/** A trainable variable holding `init`'s values (`init` is freed). */
export function variableOf(init: tf.Tensor): tf.Variable {
  const v = tf.variable(init, true);
  init.dispose();
  return v;
}

/** Adapter variables from host tensors (e.g. `readPeftAdapter(dir).tensors`), by the same names. */
export function loraParamsFromHost(tensors: ReadonlyMap<string, HostTensor>): ParamMap {
  const params: ParamMap = new Map();
  for (const [name, t] of tensors) params.set(name, variableOf(tf.tensor(t.data, t.shape)));
  return params;
}
