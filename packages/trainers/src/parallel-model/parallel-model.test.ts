import '@tensorflow/tfjs-backend-cpu';
import {
  createDecoderModel,
  initRandomModel,
  packSequences,
  tokenLogprobs,
  tokenValues,
} from '@rl2/models';
import { LocalProcessGroup } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { SINGLE_PROCESS } from './data-parallel.js';
import { contextParallelSplit } from './context-split.js';
import { microBatchBudget, planRankLayout } from './rank-layout.js';
import { checkTensorParallel } from './tensor-parallel-decoder.js';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('rank layout errors name the config keys', () => {
  it('tp/cp on one process asks for rl2 launch with enough processes', () => {
    expect(() =>
      planRankLayout(SINGLE_PROCESS, { tp_size: 2, cp_size: 2, ddp_size: null }, 'actor'),
    ).toThrow(
      'actor.tp_size=2 x actor.cp_size=2 needs 4 processes, this run has 1; start it with rl2 launch --nproc-per-node 4',
    );
  });

  it('one process without tp/cp is the plain layout', () => {
    const l = planRankLayout(SINGLE_PROCESS, { tp_size: 1, cp_size: 1, ddp_size: 1 }, 'actor');
    expect([l.world.size, l.data.size, l.replicas.size, l.countsLoss, l.tp, l.cp]).toEqual([
      1,
      1,
      1,
      true,
      undefined,
      undefined,
    ]);
  });

  it('sizes that do not divide the heads, kv heads, MLP or vocabulary', () => {
    const { config } = initRandomModel(
      {
        family: 'qwen3',
        vocabSize: 30,
        hiddenSize: 16,
        intermediateSize: 24,
        numLayers: 1,
        numHeads: 4,
        numKvHeads: 2,
      },
      1,
    );
    expect(() => checkTensorParallel(config, 4, 'critic')).toThrow(
      /critic\.tp_size=4: num_key_value_heads=2 is not divisible by tp=4 .*use tp in \{1, 2\}/,
    );
    expect(() => checkTensorParallel(config, 3, 'actor')).toThrow(
      'actor.tp_size=3: num_attention_heads=4 is not divisible by tp=3',
    );
    expect(() => checkTensorParallel({ ...config, intermediateSize: 25 }, 2, 'actor')).toThrow(
      "actor.tp_size=2: the model's intermediate_size=25 is not divisible by tp=2",
    );
    expect(() => checkTensorParallel({ ...config, vocabSize: 31 }, 2, 'actor')).toThrow(
      "the model's vocab_size=31 is not divisible by tp=2 (pad the embedding to a multiple of tp)",
    );
    expect(() => checkTensorParallel(config, 2, 'actor')).not.toThrow();
  });

  it('a micro-batch holds cp_size * tp_size * max_length_per_device tokens', () => {
    expect(
      microBatchBudget(
        { tp_size: 2, cp_size: 4, ddp_size: null, max_length_per_device: 100 },
        'actor',
      ),
    ).toEqual({ budget: 800, budgetKey: 'actor.cp_size*tp_size*max_length_per_device' });
    expect(
      microBatchBudget(
        { tp_size: 1, cp_size: 1, ddp_size: null, max_length_per_device: 100 },
        'critic',
      ),
    ).toEqual({ budget: 100, budgetKey: 'critic.max_length_per_device' });
  });
});

describe('context split of a packed row (one cp rank: padding and gathering only)', () => {
  it('pads each sequence to a multiple of 2*cp, runs the padded row and gathers back the same log-probs, entropies and values', () => {
    const spec = {
      family: 'qwen3' as const,
      vocabSize: 30,
      hiddenSize: 16,
      intermediateSize: 24,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
    };
    const model = initRandomModel(spec, 3);
    const seqs = [
      [1, 4, 7], // odd lengths are padded
      [2, 5, 8, 11, 14],
      [3, 6],
    ];
    const row = packSequences(seqs);
    const targets = seqs.flatMap((s) => s.map((_, i) => s[i + 1] ?? 0));
    const split = createDecoderModel(model.config, model.params, {
      splitRow: contextParallelSplit(new LocalProcessGroup()),
    });
    const shard = contextParallelSplit(new LocalProcessGroup())(row, targets);
    expect(shard.batch.inputIds).toEqual([1, 4, 7, 0, 2, 5, 8, 11, 14, 0, 3, 6]);
    expect(shard.batch.positionIds).toEqual([0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1]);
    const want = tokenLogprobs(model, row, targets);
    const got = tokenLogprobs(split, row, targets);
    expect(got.logprobs.shape).toEqual([10]);
    const close = (a: tf.Tensor, b: tf.Tensor) => {
      const want = b.dataSync();
      a.dataSync().forEach((x, i) => {
        expect(x).toBeCloseTo(want[i] as number, 5);
      });
    };
    close(got.logprobs, want.logprobs);
    close(got.entropy, want.entropy);
    const valueModel = initRandomModel({ ...spec, head: 'value' as const }, 4);
    close(
      tokenValues(
        createDecoderModel(valueModel.config, valueModel.params, {
          splitRow: contextParallelSplit(new LocalProcessGroup()),
        }),
        row,
      ),
      tokenValues(valueModel, row),
    );
  });
});
