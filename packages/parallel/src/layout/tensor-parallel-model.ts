import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { columnParallelLinear, rowParallelLinear, shardLinear, shardRange } from './tensor-parallel.js';
import { vocabRange } from './vocab-parallel.js';

/** How tensor parallelism treats one HF parameter. */
export type TensorParallelRole = 'column' | 'row' | 'vocab' | 'replicated';

/**
 * Megatron roles by HF module name (Llama / Qwen): q/k/v and gate/up are column-parallel,
 * o_proj and down_proj row-parallel, embed_tokens and lm_head split by vocabulary, the rest
 * (norms) replicated. `name` is a module (`model.layers.0.mlp.up_proj`) or a parameter name.
 */
export function tensorParallelRole(name: string): TensorParallelRole {
  const module = name.replace(/\.(weight|bias)$/, '');
  if (/\.(q_proj|k_proj|v_proj|gate_proj|up_proj)$/.test(module)) return 'column';
  if (/\.(o_proj|down_proj)$/.test(module)) return 'row';
  if (/(^|\.)(embed_tokens|lm_head)$/.test(module)) return 'vocab';
  return 'replicated';
}

/**
 * This tp rank's shard of every parameter (full tensors in, e.g. from a checkpoint): column
 * weights and biases split on the output rows, row weights on the input columns (their bias
 * stays whole), embedding and LM head on vocabulary rows, norms copied. Keys are unchanged.
 */
export function shardForTensorParallel(params: ReadonlyMap<string, tf.Tensor>, tp: Pick<ProcessGroup, 'rank' | 'size'>): Map<string, tf.Tensor> {
  const out = new Map<string, tf.Tensor>();
  for (const [name, t] of params) {
    const role = tensorParallelRole(name);
    const isBias = name.endsWith('.bias');
    if (role === 'column' && isBias) {
      const [a, b] = shardRange(t.shape[0]!, tp.rank, tp.size, `output features of ${name}`);
      out.set(name, tf.slice(t, [a], [b - a]));
    } else if (role === 'column' || (role === 'row' && !isBias)) {
      out.set(name, shardLinear(t as tf.Tensor2D, role, tp).weight);
    } else if (role === 'vocab') {
      const [a, b] = vocabRange(t.shape[0]!, tp);
      out.set(name, tf.slice(t, [a, ...t.shape.slice(1).map(() => 0)], [b - a, ...t.shape.slice(1)]));
    } else {
      out.set(name, t);
    }
  }
  return out;
}

/**
 * A linear-layer factory (the shape `@rl2/models` takes as `linear`): given a module name and
 * the tp-sharded parameters, returns column- or row-parallel forwards by {@link tensorParallelRole},
 * and a plain dense layer for anything else. `x` is `[N, in]` (replicated) or `[N, in/tp]` for row layers.
 */
export function tensorParallelLinearFactory(tp: ProcessGroup) {
  return (name: string, params: ReadonlyMap<string, tf.Tensor>): { name: string; forward: (x: tf.Tensor2D) => tf.Tensor2D } => {
    const weight = params.get(`${name}.weight`) as tf.Tensor2D | undefined;
    if (!weight) throw new ParallelError('LAYOUT', `tensorParallelLinearFactory: parameter "${name}.weight" is missing from the sharded map; shard the full map with shardForTensorParallel first.`);
    const bias = params.get(`${name}.bias`) as tf.Tensor1D | undefined;
    const role = tensorParallelRole(name);
    return {
      name,
      forward: (x) => {
        if (role === 'column') return columnParallelLinear(x, weight, bias, tp) as tf.Tensor2D;
        if (role === 'row') return rowParallelLinear(x, weight, bias, tp) as tf.Tensor2D;
        const y = tf.matMul(x, weight, false, true);
        return (bias ? tf.add(y, bias) : y) as tf.Tensor2D;
      },
    };
  };
}
