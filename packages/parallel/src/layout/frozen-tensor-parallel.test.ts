import '@tensorflow/tfjs-backend-cpu';
import type { FrozenMatrix } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { shardFrozenForTensorParallel } from './frozen-tensor-parallel.js';
import { shardForTensorParallel } from './tensor-parallel-shards.js';

/** A [rows, cols] matrix of distinct 16-bit words (as bfloat16: small integers' high halves). */
function matrix(rows: number, cols: number, from: number): FrozenMatrix {
  const bits = Uint16Array.from({ length: rows * cols }, (_, i) => from + i);
  return { bits, dtype: 'bfloat16', shape: [rows, cols] };
}

/** The words as float32 values (bfloat16 widened: the word in the high half). */
const widened = (m: FrozenMatrix) =>
  tf.tensor2d(new Float32Array(Uint32Array.from(m.bits, (b) => b << 16).buffer), [...m.shape]);

describe('shardFrozenForTensorParallel', () => {
  const frozen = new Map([
    ['model.layers.0.self_attn.q_proj.weight', matrix(8, 6, 0x3f00)],
    ['model.layers.0.mlp.down_proj.weight', matrix(6, 8, 0x3e00)],
    ['model.embed_tokens.weight', matrix(10, 6, 0x4000)],
  ]);

  it.each([0, 1])(
    'rank %i of 2: the 16-bit words of the float32 shards, in their own buffers',
    (rank) => {
      const tp = { rank, size: 2 };
      const shards = shardFrozenForTensorParallel(frozen, tp);
      const want = shardForTensorParallel(
        new Map([...frozen].map(([n, m]) => [n, widened(m)])),
        tp,
      );
      for (const [name, s] of shards) {
        expect(s.shape, name).toEqual(want.get(name)!.shape);
        expect(widened(s).arraySync(), name).toEqual(want.get(name)!.arraySync());
        expect(s.bits.buffer, name).not.toBe(frozen.get(name)!.bits.buffer);
      }
    },
  );

  it('view: row shards share the full bits (a caller that keeps the full model)', () => {
    const shards = shardFrozenForTensorParallel(frozen, { rank: 1, size: 2 }, { view: true });
    const q = 'model.layers.0.self_attn.q_proj.weight';
    expect(shards.get(q)!.bits.buffer).toBe(frozen.get(q)!.bits.buffer);
  });

  it('refuses a split tp does not divide, naming the matrix', () => {
    expect(() => shardFrozenForTensorParallel(frozen, { rank: 0, size: 4 })).toThrow(
      /rows of model\.embed_tokens\.weight=10 is not divisible by tp=4/,
    );
  });
});
