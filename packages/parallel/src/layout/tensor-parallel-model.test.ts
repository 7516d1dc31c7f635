import '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { shardForTensorParallel, tensorParallelRole } from './tensor-parallel-model.js';

describe('tensor-parallel roles of HF parameters', () => {
  it.each([
    ['model.layers.3.self_attn.q_proj.weight', 'column'],
    ['model.layers.3.self_attn.k_proj.bias', 'column'],
    ['model.layers.3.mlp.gate_proj', 'column'],
    ['model.layers.3.self_attn.o_proj.weight', 'row'],
    ['model.layers.3.mlp.down_proj.weight', 'row'],
    ['model.embed_tokens.weight', 'vocab'],
    ['lm_head.weight', 'vocab'],
    ['model.layers.3.input_layernorm.weight', 'replicated'],
    ['model.norm.weight', 'replicated'],
  ])('%s is %s', (name, role) => expect(tensorParallelRole(name)).toBe(role));

  it('shards each tensor the Megatron way for tp rank 1 of 2', () => {
    tf.setBackend('cpu');
    const full = new Map<string, tf.Tensor>([
      ['model.layers.0.self_attn.q_proj.weight', tf.tensor2d([0, 1, 2, 3, 4, 5, 6, 7], [4, 2])],
      ['model.layers.0.self_attn.q_proj.bias', tf.tensor1d([0, 1, 2, 3])],
      ['model.layers.0.self_attn.o_proj.weight', tf.tensor2d([0, 1, 2, 3, 4, 5, 6, 7], [2, 4])],
      ['model.embed_tokens.weight', tf.tensor2d([0, 1, 2, 3, 4, 5, 6, 7], [4, 2])],
      ['model.norm.weight', tf.tensor1d([1, 2])],
    ]);
    const s = shardForTensorParallel(full, { rank: 1, size: 2 });
    const v = (n: string) => [...s.get(n)!.dataSync()];
    expect(v('model.layers.0.self_attn.q_proj.weight')).toEqual([4, 5, 6, 7]); // output rows 2..3
    expect(v('model.layers.0.self_attn.q_proj.bias')).toEqual([2, 3]);
    expect(v('model.layers.0.self_attn.o_proj.weight')).toEqual([2, 3, 6, 7]); // input columns 2..3
    expect(v('model.embed_tokens.weight')).toEqual([4, 5, 6, 7]); // vocab rows 2..3
    expect(v('model.norm.weight')).toEqual([1, 2]);
  });
});
