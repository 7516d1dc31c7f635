import { type ProcessGroup, shardForTensorParallel, tensorParallelShape } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import type { DecoderModel } from '../model/decoder-model.js';
import type { ParamMap } from '../model/param-map.js';
import { type LoraModel, attachLora } from './lora-model.js';
import type { LoraSpec } from './lora-spec.js';

/**
 * `attachLora` of full `adapters` and `saved` modules on `model` laid out over `tp` (its
 * tensor-parallel shards): each tensor split as its base layer (`tensorParallelAxis`: a column
 * layer's lora_B by output rows, a row layer's lora_A by input columns, the other factor whole;
 * a saved embedding by vocabulary, norms whole). The full adapters are freed (this rank keeps
 * its parts as variables), also when attaching fails; `saved` stays the caller's. Without `tp`:
 * `attachLora` as it is (the adapters freed only when it fails).
 */
export function attachTensorParallelLora(
  model: DecoderModel,
  adapters: ParamMap,
  spec: LoraSpec,
  saved: ReadonlyMap<string, tf.Tensor>,
  tp: ProcessGroup | undefined,
): LoraModel {
  if (!tp) {
    try {
      return attachLora(model, adapters, spec, saved);
    } catch (err) {
      tf.dispose([...adapters.values()]);
      throw err;
    }
  }
  const sliced = shardForTensorParallel(adapters, tp);
  const local: ParamMap = new Map([...sliced].map(([n, t]) => [n, tf.variable(t, true)]));
  tf.dispose([...adapters.values(), ...sliced.values()]); // the variables keep their values
  const shards = shardForTensorParallel(saved, tp);
  try {
    return attachLora(model, local, spec, shards, (name, shape) =>
      tensorParallelShape(name, shape, tp.size),
    );
  } catch (err) {
    tf.dispose([...local.values()]);
    throw err;
  } finally {
    tf.dispose([...shards].filter(([n, t]) => t !== saved.get(n)).map(([, t]) => t));
  }
}
