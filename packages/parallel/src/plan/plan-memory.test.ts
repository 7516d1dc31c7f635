import { describe, expect, it } from 'vitest';
import { fixture } from '../../test/fixture.js';
import { countParameters } from './count-parameters.js';
import { formatMemoryPlan } from './format-memory-plan.js';
import { planMemory } from './plan-memory.js';

const qwen72b = fixture('qwen2.5-72b-config.json');
const qwen05b = {
  model_type: 'qwen2',
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  tie_word_embeddings: true,
};

describe('countParameters', () => {
  it('Qwen2.5-72B has 72,706,203,648 parameters (its published count)', () => {
    // per layer: q 8192*8192+8192, k,v 8192*1024+1024 each, o 8192^2, mlp 3*8192*29568, norms 2*8192
    expect(countParameters(qwen72b).total).toBe(72_706_203_648);
  });
  it('Qwen2.5-0.5B (tied embeddings) has 494,032,768', () => {
    expect(countParameters(qwen05b).total).toBe(494_032_768);
  });
  it('names a missing config key', () => {
    expect(() => countParameters({ ...qwen05b, hidden_size: undefined } as never)).toThrow(
      /"hidden_size" must be a positive integer/,
    );
  });
});

describe('planMemory', () => {
  it('shards parameters over fsdp only (tp=1): half of 0.5B per device on 2 GPUs, AdamW 8 bytes each', () => {
    const p = planMemory({ config: qwen05b, gpus: 2 });
    expect(p.layout).toEqual({ gpus: 2, ddp: 1, fsdp: 2, tp: 1, dp: 2, cp: 1 });
    expect(p.paramsPerDevice).toBe(247_016_384);
    expect(p.bytes.parameters).toBe(247_016_384 * 4);
    expect(p.bytes.optimizerState).toBe(247_016_384 * 8);
  });

  it('tiled attention without cp holds one log-sum-exp per query and head, not T x T scores', () => {
    const tiled = planMemory({
      config: qwen72b,
      gpus: 64,
      tp: 8,
      dtype: 'bfloat16',
      maxLengthPerDevice: 8192,
    });
    expect(tiled.bytes.attentionScores).toBe((64 / 8) * (8192 * 8) * 4);
    const full = planMemory({
      config: qwen72b,
      gpus: 64,
      tp: 8,
      dtype: 'bfloat16',
      maxLengthPerDevice: 8192,
      tiledAttention: false,
    });
    expect(full.bytes.attentionScores).toBe(2 * (64 / 8) * (8192 * 8) * (8192 * 8) * 4);
    expect([tiled.attention, full.attention]).toEqual(['tiled', 'scores']);
    expect(formatMemoryPlan(tiled)).toMatch(/attention \(tiled, lse\)\s+0\.00 GiB/);
    expect(formatMemoryPlan(full)).toMatch(/attention scores\s+256\.00 GiB/);
  });

  it('72B on 64 GPUs with tp=8: matrices / 8, norms replicated, then / fsdp=8', () => {
    const p = planMemory({
      config: qwen72b,
      gpus: 64,
      tp: 8,
      cp: 2,
      dtype: 'bfloat16',
      maxLengthPerDevice: 4096,
    });
    // 80 * (877,668,352 / 8 + 16,384) + 2 * 152064 * 8192 / 8 + 8192 = 9,089,429,504; / 8
    expect(p.paramsPerDevice).toBe(1_136_178_688);
    expect(p.bytes.parameters).toBe(1_136_178_688 * 2);
    expect(p.bytes.optimizerState).toBe(1_136_178_688 * 12); // m, v and fp32 master weights
    expect(p.bytes.logits).toBe(2 * (4096 * 8) * (152064 / 8) * 4);
    // cp 2, tiled: the lse of each local query and head, plus K and V all-gathered over the
    // row (8 kv heads / tp 8 = 1, head dim 128, bfloat16); no [local, row] scores
    expect(p.attention).toBe('tiled');
    expect(p.bytes.attentionScores).toBe(
      (64 / 8) * (4096 * 8) * 4 + 2 * (4096 * 8 * 2) * 1 * 128 * 2,
    );
    const scores = planMemory({
      config: qwen72b,
      gpus: 64,
      tp: 8,
      cp: 2,
      dtype: 'bfloat16',
      maxLengthPerDevice: 4096,
      tiledAttention: false,
    });
    expect(scores.bytes.attentionScores).toBe(2 * (64 / 8) * (4096 * 8) * (4096 * 8 * 2) * 4);
    expect(p.layout).toMatchObject({ fsdp: 8, dp: 4 });
    const text = formatMemoryPlan(p, 80 * 2 ** 30);
    expect(text).toContain(
      'layout: 64 devices = ddp 1 x fsdp 8 x tp 8 (model), dp 4 x cp 2 x tp 8 (data)',
    );
    expect(text).toMatch(/parameters\s+2\.12 GiB/);
    expect(text).toMatch(/attention \(tiled, lse \+ row K\/V\)\s+0\.03 GiB/);
  });

  it('refuses layouts RL2 refuses, with the rule', () => {
    expect(() => planMemory({ config: qwen72b, gpus: 12, tp: 8 })).toThrow(
      /not divisible by ddp\*tp/,
    );
    expect(() => planMemory({ config: qwen72b, gpus: 16, tp: 16 })).toThrow(
      /num_key_value_heads=8 is not divisible by tp=16/,
    );
  });
});
