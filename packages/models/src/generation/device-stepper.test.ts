import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { deviceStepper, sharedRows } from './device-stepper.js';
import type { GenerationRequest } from './generation-request.js';
import { createGenerator } from './generator.js';

const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
let model: DecoderModel;

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
  model = (await loadModel(join(FIX, 'llama'))).model;
});

const sampled = (seed: number): GenerationRequest => ({
  inputIds: [1, 40, 41, 42],
  temperature: 1,
  topP: 0.95,
  seed,
  maxNewTokens: 5 + (seed % 3),
  ignoreEos: true,
});
const REQUESTS: GenerationRequest[] = [
  { inputIds: [1, 17, 99, 5, 64], temperature: 0, maxNewTokens: 6, ignoreEos: true },
  { inputIds: [1, 8], temperature: 0.7, topK: 4, seed: 5, maxNewTokens: 9, topLogprobs: 3 },
  ...[1, 2, 3, 4].map(sampled),
];

describe('deviceStepper', () => {
  it('rows with the same prompt and padding share one prefill row', () => {
    const tokens = [
      [0, 1, 2],
      [5, 6, 7],
      [0, 1, 2],
      [0, 1, 2],
    ];
    expect(sharedRows(tokens, [1, 0, 1, 0])).toEqual({ unique: [0, 1, 3], of: [0, 1, 0, 2] });
  });

  it('generates what the host-sampling stepper does, frees its cache, joins late requests', async () => {
    const run = async (device: boolean) => {
      const gen = createGenerator(model, {
        maxBatch: 4,
        ...(device ? { stepper: deviceStepper(model) } : {}),
      });
      const first = Promise.all(REQUESTS.map((r) => gen.generate(r)));
      // a request sent later (it joins the running batch, or a new one)
      await new Promise((r) => setTimeout(r, 5));
      const late = await gen.generate(sampled(9));
      return [...(await first), late];
    };
    const want = await run(false);
    const before = tf.memory().numTensors;
    const got = await run(true);
    expect(tf.memory().numTensors).toBe(before);
    expect(got.map((r) => r.outputIds)).toEqual(want.map((r) => r.outputIds));
    expect(got.map((r) => r.finishReason)).toEqual(want.map((r) => r.finishReason));
    got.forEach((r, i) => {
      r.logprobs.forEach((lp, j) => {
        expect(Math.abs(lp - want[i]!.logprobs[j]!)).toBeLessThan(1e-5);
      });
    });
    expect(got[1]!.topLogprobs!.map((t) => t.map((x) => x.id))).toEqual(
      want[1]!.topLogprobs!.map((t) => t.map((x) => x.id)),
    );
  });
});
