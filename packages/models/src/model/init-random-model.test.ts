import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import { tokenLogprobs } from '../heads/token-logprobs.js';
import { initModelCheckpoint, initRandomModel } from './init-random-model.js';
import { disposeParams } from './param-map.js';

const tmp = tempDir('rl2-models-init-');
beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

const spec = {
  family: 'qwen3',
  vocabSize: 64,
  hiddenSize: 16,
  intermediateSize: 24,
  numLayers: 1,
  numHeads: 2,
  numKvHeads: 1,
} as const;

describe('initRandomModel', () => {
  it('initialises like HF (N(0, 0.02) weights, unit norms) deterministically', () => {
    const a = initRandomModel(spec, 5);
    const b = initRandomModel(spec, 5);
    const w = a.params.get('model.layers.0.mlp.up_proj.weight')!.dataSync() as Float32Array;
    expect(w).toEqual(b.params.get('model.layers.0.mlp.up_proj.weight')!.dataSync());
    const std = Math.sqrt(w.reduce((s, x) => s + x * x, 0) / w.length);
    expect(std).toBeGreaterThan(0.016);
    expect(std).toBeLessThan(0.024);
    expect([...a.params.get('model.layers.0.self_attn.q_norm.weight')!.dataSync()]).toEqual(
      new Array(8).fill(1),
    );
    expect(a.params.has('lm_head.weight')).toBe(false); // qwen ties by default
    disposeParams(a.params);
    disposeParams(b.params);
  });

  it('writes a checkpoint that loads back and scores tokens', async () => {
    const { model, files } = await initModelCheckpoint(
      join(tmp, 'm'),
      { ...spec, family: 'llama' },
      { seed: 1 },
    );
    expect(files.map((f) => f.split('/').at(-1))).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
    ]);
    const { model: back, generationConfig } = await loadModel(join(tmp, 'm'));
    expect(back.config.architecture).toBe('LlamaForCausalLM');
    expect(generationConfig?.eosTokenIds).toEqual([2]);
    const { logprobs, entropy } = tokenLogprobs(
      back,
      { inputIds: [1, 5, 9], positionIds: [0, 1, 2] },
      [5, 9, 2],
    );
    // near-uniform at init: logp ~ -log(64). A logit is the final-normed hidden state (rms 1 over
    // 16 dims) times a N(0, 0.02^2) head row, so it has std sqrt(16) * 0.02 = 0.08 around the
    // mean; allow 4 standard deviations (a trained model is off by whole nats).
    logprobs.dataSync().forEach((lp) => {
      expect(Math.abs(lp + Math.log(64))).toBeLessThan(4 * 0.08);
    });
    tf.dispose([logprobs, entropy]);
    disposeParams(model.params);
    disposeParams(back.params);
  });
});
