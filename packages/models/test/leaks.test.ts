import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { createGenerator } from '../src/generation/generator.js';
import { tokenLogprobs } from '../src/heads/token-logprobs.js';
import { tokenValues } from '../src/heads/token-values.js';
import { initRandomModel } from '../src/model/init-random-model.js';
import { packSequences } from '../src/model/token-batch.js';

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

const spec = {
  family: 'llama',
  vocabSize: 96,
  hiddenSize: 16,
  intermediateSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
} as const;
const row = packSequences([
  [1, 5, 9, 14, 3],
  [1, 40, 41],
  [1, 7, 7, 7, 8, 2],
]);
const targets = [...row.inputIds.slice(1), 0];

describe('no tensor leaks', () => {
  it.each([false, true])(
    'training steps keep tensor count and bytes constant (recompute=%s)',
    (recompute) => {
      const model = initRandomModel(spec, 3);
      const params = [...model.params.values()];
      const step = () => {
        const { value, grads } = tf.variableGrads(() => {
          const { logprobs, entropy } = tokenLogprobs(model, row, targets, {
            recompute,
            vocabChunk: 40,
          });
          return tf.sub(tf.neg(tf.mean(logprobs)), tf.mul(0.01, tf.mean(entropy))) as tf.Scalar;
        }, params);
        tf.tidy(() => {
          for (const p of params) p.assign(tf.sub(p, tf.mul(0.1, grads[p.name]!)));
        });
        const loss = value.dataSync()[0]!;
        tf.dispose([value, ...Object.values(grads)]);
        return loss;
      };
      const first = step();
      const mem = tf.memory();
      const second = step();
      step();
      expect(tf.memory().numTensors).toBe(mem.numTensors);
      expect(tf.memory().numBytes).toBe(mem.numBytes);
      expect(second).toBeLessThan(first); // and it learns
      for (const p of params) p.dispose();
    },
  );

  it('value forward and generation steps keep tensor count and bytes constant', async () => {
    const model = initRandomModel(spec, 4);
    const gen = createGenerator(model, { maxBatch: 2 });
    const run = () =>
      Promise.all(
        [1, 2, 3].map((i) =>
          gen.generate({ inputIds: row.inputIds.slice(0, 2 + i), maxNewTokens: 3 + i, seed: i }),
        ),
      );
    await run();
    const mem = tf.memory();
    await run();
    expect(tf.memory().numTensors).toBe(mem.numTensors);
    expect(tf.memory().numBytes).toBe(mem.numBytes);
    const critic = initRandomModel({ ...spec, head: 'value' }, 5);
    const before = tf.memory().numTensors;
    tokenValues(critic, row).dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
