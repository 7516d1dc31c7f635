import { describe, expect, it } from 'vitest';
import { parseShardSize, planShards } from './shard-plan.js';

const spec = (name: string, n: number) => ({ name, shape: [n] });

describe('max_shard_size', () => {
  it('reads sizes as transformers does (decimal and binary units, bytes)', () => {
    expect(parseShardSize('5GB')).toBe(5e9);
    expect(parseShardSize('500MB')).toBe(5e8);
    expect(parseShardSize('2GiB')).toBe(2 ** 31);
    expect(parseShardSize('10kb')).toBe(10_000);
    expect(parseShardSize('1.5GB')).toBe(1.5e9);
    expect(parseShardSize(1234)).toBe(1234);
    expect(parseShardSize('1234')).toBe(1234);
    expect(() => parseShardSize('5 parsecs', 'actor.max_shard_size')).toThrow(
      /actor\.max_shard_size=5 parsecs is not a size; use bytes or a number with a unit, e\.g\. 5GB/,
    );
    expect(() => parseShardSize(0)).toThrow(/is not a size/);
  });
});

describe('planShards (huggingface_hub split_state_dict_into_shards)', () => {
  it('one file named model.safetensors when everything fits', () => {
    const plan = planShards([spec('a', 10), spec('b', 10)], 4, 80);
    expect(plan.files.map((f) => f.file)).toEqual(['model.safetensors']);
    expect(plan.totalSize).toBe(80);
    expect(plan.weightMap).toEqual({});
  });

  it('starts a new shard when a tensor would tip the current one over the limit, in model order', () => {
    const plan = planShards([spec('z', 3), spec('y', 3), spec('x', 3)], 1, 7);
    expect(plan.files.map((f) => [f.file, f.specs.map((s) => s.name)])).toEqual([
      ['model-00001-of-00002.safetensors', ['z', 'y']],
      ['model-00002-of-00002.safetensors', ['x']],
    ]);
    expect(plan.weightMap).toEqual({
      z: 'model-00001-of-00002.safetensors',
      y: 'model-00001-of-00002.safetensors',
      x: 'model-00002-of-00002.safetensors',
    });
  });

  it('gives a tensor larger than the limit a shard of its own, before the shard being filled', () => {
    const plan = planShards([spec('a', 2), spec('big', 10), spec('c', 2)], 1, 5);
    expect(plan.files.map((f) => f.specs.map((s) => s.name))).toEqual([['big'], ['a', 'c']]);
    expect(plan.totalSize).toBe(14);
  });
});
