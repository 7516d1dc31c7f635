// The decoder models on the webgpu backend (CI: Mesa's lavapipe, a software Vulkan adapter)
// against the native backend: log-probs, entropies and every parameter's gradient (one
// vocabulary chunk and several), and greedy generation through the KV cache, token for token;
// the training pass attends through the WGSL tiled attention kernels.
import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import { nativeForTests, recordShaderKeys, webgpuForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModel } from '../src/checkpoint/load-checkpoint.js';
import { createGenerator } from '../src/generation/generator.js';
import { tokenLogprobs } from '../src/heads/token-logprobs.js';

const gpu = webgpuForTests();
const native = nativeForTests();
const FIX = join(import.meta.dirname, '..', 'fixtures');
const PROMPTS = [
  [1, 17, 99, 5, 64],
  [1, 8],
  [1, 120, 33, 2, 91, 60, 7, 7, 100],
];
// a packed row of two sequences (positions restart, segments differ)
const BATCH = {
  inputIds: [1, 17, 99, 5, 64, 30, 1, 8, 77, 12],
  positionIds: [0, 1, 2, 3, 4, 5, 0, 1, 2, 3],
  segmentIds: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
  rows: 1,
};
const TARGETS = [17, 99, 5, 64, 30, 2, 8, 77, 12, 2];

/** On `backend`: log-probs, entropies and gradients of sum(logp) + 0.3 sum(entropy), greedy tokens. */
async function runModel(backend: 'native' | 'webgpu', name: string, vocabChunk: number) {
  await initEngine({ backend, threads: 1, env: {}, logger: () => {} });
  const { model } = await loadModel(join(FIX, name));
  const params = [...model.params.values()] as tf.Variable[];
  let stats: tf.Tensor[] = [];
  const recording = recordShaderKeys();
  const { grads, value } = tf.variableGrads(() => {
    const { logprobs, entropy } = tokenLogprobs(model, BATCH, TARGETS, { vocabChunk });
    stats = [tf.keep(tf.clone(logprobs)), tf.keep(tf.clone(entropy))];
    return tf.add(tf.sum(logprobs), tf.mul(tf.sum(entropy), 0.3)) as tf.Scalar;
  }, params);
  recording.stop();
  const read = async (t: tf.Tensor) => Float32Array.from(await t.data());
  const out = {
    stats: await Promise.all(stats.map(read)),
    grads: Object.fromEntries(
      await Promise.all(
        [...model.params].map(async ([k, v]) => [k, await read(grads[v.name]!)] as const),
      ),
    ),
    tokens: [] as number[][],
    shaderKeys: recording.keys,
  };
  tf.dispose([value, ...stats, ...Object.values(grads)]);
  const gen = createGenerator(model, { maxBatch: 4 });
  const results = await Promise.all(
    PROMPTS.map((p) =>
      gen.generate({ inputIds: p, temperature: 0, maxNewTokens: 6, ignoreEos: true }),
    ),
  );
  out.tokens = results.map((r) => r.outputIds);
  tf.dispose(params);
  return out;
}

function expectClose(got: Float32Array, want: Float32Array, what: string) {
  expect(got.length, what).toBe(want.length);
  let scale = 0;
  for (const w of want) scale = Math.max(scale, Math.abs(w));
  for (let i = 0; i < want.length; i++)
    expect(Math.abs(got[i]! - want[i]!), `${what}[${i}]`).toBeLessThan(1e-4 * scale + 1e-6);
}

describe.skipIf(!gpu.ok || !native.ok)('decoder models on webgpu equal native', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each([
    ['qwen3', 8192],
    ['qwen3', 32],
    ['llama', 48],
  ] as const)(
    '%s, vocabulary chunk %d: log-probs, entropies, gradients, greedy tokens',
    async (name, chunk) => {
      const want = await runModel('native', name, chunk);
      const got = await runModel('webgpu', name, chunk);
      expect(tf.getBackend()).toBe('webgpu');
      expectClose(got.stats[0]!, want.stats[0]!, 'logprobs');
      expectClose(got.stats[1]!, want.stats[1]!, 'entropy');
      expect(Object.keys(got.grads).sort()).toEqual(Object.keys(want.grads).sort());
      for (const [k, g] of Object.entries(want.grads)) expectClose(got.grads[k]!, g, `grad ${k}`);
      expect(got.tokens).toEqual(want.tokens);
      // the forward and backward attend through the WGSL tiled kernels (no [T, T] mask path)
      for (const key of ['rl2FlashAttention_', 'rl2FlashAttentionDq_', 'rl2FlashAttentionDkv_'])
        expect(
          got.shaderKeys.some((k) => k.startsWith(key)),
          key,
        ).toBe(true);
    },
    180_000,
  );
});
