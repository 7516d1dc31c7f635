import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './model-config.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const read = (name: string) => JSON.parse(readFileSync(join(FIX, name, 'config.json'), 'utf8'));

describe('parseModelConfig', () => {
  it('reads the three families and their options', () => {
    const llama = parseModelConfig(read('llama'));
    expect(llama).toMatchObject({
      family: 'llama',
      head: 'causal-lm',
      headDim: 8,
      numKvHeads: 2,
      qkvBias: false,
      tieWordEmbeddings: false,
    });
    expect(llama.ropeScaling).toEqual({
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 16,
    });
    expect(parseModelConfig(read('qwen2'))).toMatchObject({
      family: 'qwen2',
      qkvBias: true,
      outputBias: false,
      tieWordEmbeddings: true,
    });
    expect(parseModelConfig(read('qwen3'))).toMatchObject({
      family: 'qwen3',
      qkNorm: true,
      headDim: 16,
      numKvHeads: 1,
    });
    expect(parseModelConfig(read('qwen2-critic'))).toMatchObject({
      head: 'value',
      tieWordEmbeddings: false,
    });
  });

  it('rejects unknown architectures and unsupported options by name', () => {
    const base = read('llama');
    expect(() =>
      parseModelConfig({ ...base, architectures: ['MistralForCausalLM'] }, 'm/config.json'),
    ).toThrow(
      /m\/config\.json: architectures "MistralForCausalLM" is not supported.*LlamaForCausalLM/,
    );
    expect(() =>
      parseModelConfig({ ...base, rope_scaling: { rope_type: 'yarn', factor: 4 } }),
    ).toThrow(/rope_scaling type "yarn"/);
    expect(() => parseModelConfig({ ...base, hidden_act: 'gelu' })).toThrow(/hidden_act "gelu"/);
    expect(() => parseModelConfig({ ...read('qwen2'), use_sliding_window: true })).toThrow(
      /use_sliding_window/,
    );
    expect(() => parseModelConfig({ ...base, num_key_value_heads: 3 })).toThrow(
      /multiple of num_key_value_heads \(3\)/,
    );
    expect(() => parseModelConfig({ ...base, hidden_size: 0 })).toThrow(
      /"hidden_size" must be a positive integer/,
    );
  });
});
