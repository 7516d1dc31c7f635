import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import { tokenLogits, tokenLogprobs } from '../heads/token-logprobs.js';
import { tokenValues } from '../heads/token-values.js';
import { attachLora, mergeLora } from '../lora/lora-model.js';
import { initLoraParams } from '../lora/lora-params.js';
import { LORA_TARGET_MODULES, type LoraSpec } from '../lora/lora-spec.js';
import { initModelCheckpoint, type ModelSpec } from '../model/init-random-model.js';
import type { TokenBatch } from '../model/token-batch.js';

// A LoRA model on a base kept in bfloat16 (`frozenBase`) against the same adapters on that
// checkpoint loaded as float32: the bf16 values are exact in float32, so logits, log-probs,
// entropies and the adapters' gradients agree up to float32 summation order (1e-5 relative).
const hasNative = nativeForTests().ok;
const tmp = tempDir('rl2-frozen-base-');

function relDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return m / Math.max(s, 1e-12);
}

const spec: LoraSpec = {
  rank: 4,
  alpha: 8,
  dropout: 0,
  targetModules: [...LORA_TARGET_MODULES],
  useRslora: false,
};
// two packed rows of two sequences each; 80 tokens so the frozen products take the sgemm path
const T = 40;
const ids = Array.from({ length: 2 * T }, (_, i) => (i * 37 + 11) % 300);
const batch: TokenBatch = {
  inputIds: ids,
  positionIds: Array.from({ length: 2 * T }, (_, i) => (i % T) % 23),
  segmentIds: Array.from({ length: 2 * T }, (_, i) => Math.floor(i / T) * 2 + (i % T < 23 ? 0 : 1)),
};
const targets = ids.map((_, i) => ids[(i + 1) % ids.length]!);

const MODELS: [string, ModelSpec][] = [
  [
    'qwen2, tied, q/k/v biases',
    {
      family: 'qwen2',
      vocabSize: 300,
      hiddenSize: 48,
      intermediateSize: 80,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
    },
  ],
  [
    'llama, untied head',
    {
      family: 'llama',
      vocabSize: 300,
      hiddenSize: 48,
      intermediateSize: 80,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
    },
  ],
];

describe.skipIf(!hasNative).each(MODELS)('a bfloat16 frozen base, %s', (label, modelSpec) => {
  const dir = join(tmp, label.split(',')[0]!);
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    await initModelCheckpoint(
      dir,
      { ...modelSpec, initializerRange: 0.2 },
      { dtype: 'bfloat16', seed: 3 },
    );
  });

  /** The same adapters (B nonzero, so they count) on the base loaded each way. */
  async function open(frozenBase: boolean) {
    const { model } = await loadModel(dir, { frozenBase });
    const adapters = initLoraParams(model.config, spec, 5);
    for (const [name, v] of adapters)
      if (name.includes('lora_B'))
        v.assign(tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', 9), 0.3));
    return attachLora(model, adapters, spec);
  }

  it('keeps the projections and the embedding as bits, not variables', async () => {
    const lora = await open(true);
    const frozen = lora.model.frozen!;
    expect(frozen.get('model.layers.1.mlp.down_proj.weight')?.bits).toBeInstanceOf(Uint16Array);
    expect(frozen.has('model.embed_tokens.weight')).toBe(true);
    expect(frozen.has('lm_head.weight')).toBe(modelSpec.family === 'llama');
    expect(lora.model.params.has('model.layers.0.self_attn.q_proj.weight')).toBe(false);
    expect(lora.model.params.has('model.norm.weight')).toBe(true);
    expect(() => mergeLora(lora)).toThrow(/base_dtype=float32/);
  });

  for (const recompute of [false, true])
    it(`logits, log-probs, entropies and adapter gradients within 1e-5 of the float32 base (recompute ${recompute})`, async () => {
      const runs = [];
      for (const frozenBase of [false, true]) {
        const lora = await open(frozenBase);
        const names = [...lora.adapters.keys()];
        const vars = names.map((n) => lora.adapters.get(n)!);
        const { value, grads } = tf.variableGrads(() => {
          const { logprobs, entropy } = tokenLogprobs(lora.model, batch, targets, {
            recompute,
            vocabChunk: 128,
          });
          return tf.add(tf.sum(logprobs), tf.mul(tf.sum(entropy), 0.5)) as tf.Scalar;
        }, vars);
        const { logprobs, entropy } = tokenLogprobs(lora.model, batch, targets, {
          vocabChunk: 128,
        });
        runs.push({
          loss: value.dataSync()[0]!,
          logits: tokenLogits(lora.model, batch).dataSync(),
          logprobs: logprobs.dataSync(),
          entropy: entropy.dataSync(),
          grads: names.map((n) => grads[vars[names.indexOf(n)]!.name]!.dataSync()),
        });
      }
      const [f32, bf16] = runs as [(typeof runs)[0], (typeof runs)[0]];
      expect(relDiff([bf16.loss], [f32.loss])).toBeLessThan(1e-5);
      expect(relDiff(bf16.logits, f32.logits)).toBeLessThan(1e-5);
      expect(relDiff(bf16.logprobs, f32.logprobs)).toBeLessThan(1e-5);
      expect(relDiff(bf16.entropy, f32.entropy)).toBeLessThan(1e-5);
      for (const [i, g] of f32.grads.entries())
        expect(relDiff(bf16.grads[i]!, g)).toBeLessThan(1e-5);
      expect(Math.max(...f32.grads.map((g) => Math.max(...g.map(Math.abs))))).toBeGreaterThan(0);
    });
});

describe.skipIf(!hasNative)('a bfloat16 frozen value model', () => {
  it('scores tokens as the float32 base does', async () => {
    const dir = join(tmp, 'value');
    await initModelCheckpoint(
      dir,
      { ...MODELS[0]![1], initializerRange: 0.2 },
      { dtype: 'bfloat16', seed: 4 },
    );
    const out = [];
    for (const frozenBase of [false, true]) {
      const { model } = await loadModel(dir, { head: 'value', frozenBase });
      out.push(tokenValues(model, batch).dataSync());
    }
    expect(relDiff(out[1]!, out[0]!)).toBeLessThan(1e-5);
  });
});
