// Generation on the webgpu backend (CI: Mesa's lavapipe) against native: the default generator
// takes the device stepper there (KV cache on the device, sampling with tensor ops) and gives
// native's tokens; each prefill or step reads back only the sampled ids (a few floats per row),
// never logits, and nothing runs on the native backend meanwhile.
import { join } from 'node:path';
import { initEngine, kernelDispatches } from '@rl2/engine';
import { nativeForTests, webgpuForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModel } from '../src/checkpoint/load-checkpoint.js';
import type { GenerationRequest } from '../src/generation/generation-request.js';
import { createGenerator } from '../src/generation/generator.js';

const gpu = webgpuForTests();
const native = nativeForTests();
const FIX = join(import.meta.dirname, '..', 'fixtures');
const GREEDY = { temperature: 0, maxNewTokens: 7, ignoreEos: true };
// greedy rows, then a group of three responses to one prompt (one shared prefill row) sampled
const REQUESTS: GenerationRequest[] = [
  { inputIds: [1, 17, 99, 5, 64], ...GREEDY },
  { inputIds: [1, 8], ...GREEDY, maxNewTokens: 3, topLogprobs: 2 },
  { inputIds: [1, 120, 33, 2, 91, 60, 7, 7, 100], ...GREEDY },
  ...[11, 12, 13].map((seed) => ({
    inputIds: [1, 40, 41, 42],
    temperature: 0.9,
    topK: 20,
    topP: 0.9,
    seed,
    maxNewTokens: 6,
    ignoreEos: true,
  })),
];

interface Reads {
  bytes: number[];
}

/** Counts every download from the GPU (webgpu's getBufferData) and its size. */
function countReads(): Reads {
  const backend = tf.backend() as unknown as {
    getBufferData: (buffer: unknown) => Promise<ArrayBuffer>;
  };
  const reads: Reads = { bytes: [] };
  const original = backend.getBufferData.bind(backend);
  backend.getBufferData = async (buffer) => {
    const data = await original(buffer);
    reads.bytes.push(data.byteLength);
    return data;
  };
  return reads;
}

async function generate(backend: 'native' | 'webgpu') {
  await initEngine({ backend, threads: 1, env: {}, logger: () => {} });
  const { model } = await loadModel(join(FIX, 'qwen3'));
  const reads = backend === 'webgpu' ? countReads() : undefined;
  const dispatches = kernelDispatches();
  const gen = createGenerator(model, { maxBatch: 8 });
  const results = await Promise.all(REQUESTS.map((r) => gen.generate(r)));
  const out = {
    results,
    reads,
    steps: gen.stats().steps,
    nativeDispatches: kernelDispatches() - dispatches,
    backend: tf.getBackend(),
  };
  tf.dispose([...model.params.values()]);
  return out;
}

describe.skipIf(!gpu.ok || !native.ok)('generation on webgpu', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('gives native tokens and logprobs, reading back only sampled ids once per forward', async () => {
    const want = await generate('native');
    const got = await generate('webgpu');
    expect(got.backend).toBe('webgpu');
    expect(got.results.map((r) => r.outputIds)).toEqual(want.results.map((r) => r.outputIds));
    got.results.forEach((r, i) => {
      r.logprobs.forEach((lp, j) => {
        expect(Math.abs(lp - want.results[i]!.logprobs[j]!)).toBeLessThan(1e-4);
      });
    });
    expect(got.results[1]!.topLogprobs!.map((t) => t.map((x) => x.id))).toEqual(
      want.results[1]!.topLogprobs!.map((t) => t.map((x) => x.id)),
    );
    // the sampled group's responses differ (their own seeds) though they shared a prefill row
    expect(new Set(got.results.slice(3).map((r) => r.outputIds.join())).size).toBeGreaterThan(1);
    // one prefill, then one read per decode step; each a few floats per row (token, logprob,
    // top ids, top logprobs), far less than one row of logits (128 floats)
    expect(got.reads!.bytes.length).toBe(got.steps + 1);
    for (const bytes of got.reads!.bytes) expect(bytes).toBeLessThanOrEqual(6 * 6 * 4);
    expect(got.nativeDispatches).toBe(0);
    expect(want.nativeDispatches).toBeGreaterThan(0);
  }, 180_000);
});
