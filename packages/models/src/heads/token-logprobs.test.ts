import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultVocabChunk, HEAD_LOGITS_BUDGET } from './token-logprobs.js';

const native = nativeForTests().ok;

beforeAll(async () => {
  await initEngine({ backend: native ? 'native' : 'cpu', logger: () => {} });
});

describe('defaultVocabChunk', () => {
  it.skipIf(!native)(
    'is the whole vocabulary on native while N x V fits the budget, else 8192',
    async () => {
      await tf.setBackend('native');
      const v = 151936; // Qwen3's rows: 441 tokens fit 2^26 floats, 442 do not
      expect(HEAD_LOGITS_BUDGET).toBe(2 ** 26);
      expect(defaultVocabChunk(256, v)).toBe(v);
      expect(defaultVocabChunk(441, v)).toBe(v);
      expect(defaultVocabChunk(442, v)).toBe(8192);
    },
  );

  it('is 8192 on a backend without the fused log-prob kernel (cpu)', async () => {
    await tf.setBackend('cpu');
    expect(defaultVocabChunk(256, 151936)).toBe(8192);
    expect(defaultVocabChunk(1, 128)).toBe(8192);
  });
});
