import '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import type { ProcessGroup } from '../comm/collective.js';
import {
  gatherTensorParallel,
  shardForTensorParallel,
  tensorParallelAxis,
  tensorParallelRole,
  tensorParallelShape,
} from './tensor-parallel-shards.js';

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

  it.each([
    ['model.layers.3.self_attn.q_proj.lora_A.weight', undefined],
    ['model.layers.3.self_attn.q_proj.lora_B.weight', 0],
    ['model.layers.3.mlp.up_proj.lora_B.weight', 0],
    ['model.layers.3.mlp.down_proj.lora_A.weight', 1],
    ['model.layers.3.self_attn.o_proj.lora_B.weight', undefined],
    ['model.layers.3.self_attn.o_proj.weight', 1],
  ])('LoRA factors split as their layer: %s on axis %s', (name, axis) =>
    expect(tensorParallelAxis(name)).toBe(axis),
  );

  it("a rank's shape divides the split axis only", () => {
    expect(tensorParallelShape('model.layers.0.mlp.up_proj.lora_B.weight', [32, 4], 2)).toEqual([
      16, 4,
    ]);
    expect(tensorParallelShape('model.layers.0.mlp.down_proj.lora_A.weight', [4, 32], 2)).toEqual([
      4, 16,
    ]);
    expect(tensorParallelShape('model.layers.0.mlp.down_proj.lora_B.weight', [16, 4], 2)).toEqual([
      16, 4,
    ]);
    expect(tensorParallelShape('model.embed_tokens.weight', [100, 16], 4)).toEqual([25, 16]);
    expect(tensorParallelShape('model.norm.weight', [16], 2)).toEqual([16]);
  });

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

  it('gatherTensorParallel undoes the shard of every role for tp = 3 (the gathered rank-major shards come back full)', () => {
    tf.setBackend('cpu');
    const iota = (shape: number[]) =>
      tf.tensor(
        Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => i * 0.5 - 3),
        shape,
      );
    const full = new Map<string, tf.Tensor>([
      ['model.layers.0.mlp.up_proj.weight', iota([6, 4])],
      ['model.layers.0.self_attn.q_proj.bias', iota([6])],
      ['model.layers.0.mlp.down_proj.weight', iota([4, 6])],
      ['model.layers.0.self_attn.o_proj.bias', iota([4])],
      ['lm_head.weight', iota([9, 4])],
      ['model.layers.0.input_layernorm.weight', iota([4])],
    ]);
    const shards = [0, 1, 2].map((rank) => shardForTensorParallel(full, { rank, size: 3 }));
    for (const [name, want] of full) {
      const all = Float32Array.from(shards.flatMap((s) => [...s.get(name)!.dataSync()]));
      for (let rank = 0; rank < 3; rank++) {
        const local = shards[rank]!.get(name)!;
        const tp = { rank, size: 3, allGather: () => all } as unknown as ProcessGroup;
        const got = gatherTensorParallel(
          name,
          Float32Array.from(local.dataSync()),
          local.shape,
          tp,
        );
        expect(got.shape, name).toEqual(want.shape);
        expect([...got.data], `${name} on rank ${rank}`).toEqual([...want.dataSync()]);
      }
    }
  });
});
