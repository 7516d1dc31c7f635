import { describe, expect, it } from 'vitest';
import { checkTensorParallelSizes, tensorParallelHeads } from './tensor-parallel.js';
import { vocabRange } from './vocab-parallel.js';

describe('tensor-parallel shapes', () => {
  it('splits heads and kv heads over tp', () => {
    expect(tensorParallelHeads(64, 8, 4)).toEqual({ heads: 16, kvHeads: 2 });
  });
  it('rejects kv_heads % tp != 0 and lists the tp values that work', () => {
    expect(() => tensorParallelHeads(28, 4, 8)).toThrow(
      /num_attention_heads=28 is not divisible by tp=8/,
    );
    expect(() => tensorParallelHeads(32, 2, 4)).toThrow(
      /num_key_value_heads=2 is not divisible by tp=4 .*use tp in \{1, 2\}/,
    );
  });
  it('checks every size a decoder splits: heads, MLP width, vocabulary', () => {
    const sizes = { numHeads: 8, numKvHeads: 4, intermediateSize: 24, vocabSize: 40 };
    expect(() => checkTensorParallelSizes(sizes, 4)).not.toThrow();
    expect(() => checkTensorParallelSizes(sizes, 8)).toThrow(/num_key_value_heads=4/);
    expect(() => checkTensorParallelSizes({ ...sizes, intermediateSize: 22 }, 4)).toThrow(
      "the model's intermediate_size=22 is not divisible by tp=4; choose a tp that divides it.",
    );
    expect(() => checkTensorParallelSizes({ ...sizes, vocabSize: 42 }, 4)).toThrow(
      'vocab_size=42 is not divisible by tp=4 (pad the embedding to a multiple of tp)',
    );
  });
  it('gives each tp rank a contiguous vocabulary slice and asks to pad otherwise', () => {
    expect(vocabRange(152064, { rank: 3, size: 4 })).toEqual([114048, 152064]);
    expect(() => vocabRange(10, { rank: 0, size: 4 })).toThrow(
      /vocab_size .*=10 is not divisible by tp=4/,
    );
  });
});
