// A recomputed layer can hold its parameters as something smaller between forward and backward
// (ZeRO-3 shards): the source is opened once in the forward and once in the backward, the
// forward's tensors are freed with the layer, and the gradients reach the source's inputs.
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { tokenLogprobs } from '../src/heads/token-logprobs.js';
import { layerParamNames } from '../src/layers/decoder-layer.js';
import type { LayerParamSource } from '../src/layers/recomputed-layer.js';
import { createDecoderModel } from '../src/model/decoder-model.js';
import { initRandomModel } from '../src/model/init-random-model.js';
import type { ParamMap } from '../src/model/param-map.js';
import { packSequences } from '../src/model/token-batch.js';

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

describe('recomputed layers with a LayerParamSource', () => {
  it("opens each layer once forward and once backward, frees each layer's copy before the next opens, same gradients", () => {
    const model = initRandomModel(
      {
        family: 'qwen3',
        vocabSize: 40,
        hiddenSize: 16,
        intermediateSize: 32,
        numLayers: 3,
        numHeads: 4,
        numKvHeads: 2,
      },
      2,
    );
    const batch = packSequences([
      [1, 2, 3, 4, 5],
      [6, 7, 8],
    ]);
    const targets = [2, 3, 4, 5, 0, 7, 8, 0];
    const opens: { layer: number; tensors: tf.Tensor[] }[] = [];
    let inBackward = false;
    const previousCopiesAlive: boolean[] = [];
    // the source stands for a layer by one "packed" input: the layer's tensors concatenated flat
    const lookup = Object.assign(new Map(model.params) as ParamMap, {
      layerSource: (names: string[]): LayerParamSource => {
        const layer = Number(/^model\.layers\.(\d+)\./.exec(names[0] as string)?.[1]);
        const sizes = names.map((n) => model.params.get(n)!.size);
        const packed = tf.concat(names.map((n) => tf.reshape(model.params.get(n)!, [-1])));
        return {
          inputs: [packed],
          open: ([flat]) => {
            if (opens.filter((o) => o.layer === layer).length === 1) inBackward = true;
            // whenever a layer opens, the copies earlier forward runs gathered are gone already
            previousCopiesAlive.push(...opens.flatMap((o) => o.tensors.map((t) => !t.isDisposed)));
            const parts = tf.split(flat as tf.Tensor, sizes);
            const tensors = names.map((n, i) => tf.reshape(parts[i]!, model.params.get(n)!.shape));
            if (!inBackward) opens.push({ layer, tensors });
            else opens.push({ layer, tensors: [] });
            return new Map(names.map((n, i) => [n, tensors[i]!]));
          },
        };
      },
    });
    const sourced = createDecoderModel(model.config, lookup);
    const vars = [...model.params.values()];
    const loss = (m: typeof model) => () =>
      tf.sum(tokenLogprobs(m, batch, targets, { recompute: true }).logprobs) as tf.Scalar;
    const want = tf.variableGrads(loss(model), vars);
    const got = tf.variableGrads(loss(sourced), vars);
    // forward opens 0, 1, 2, then the backward reopens 2, 1, 0
    expect(opens.map((o) => o.layer)).toEqual([0, 1, 2, 2, 1, 0]);
    expect(previousCopiesAlive.length).toBeGreaterThan(0);
    expect(
      previousCopiesAlive.every((alive) => !alive),
      'one layer held in full at a time: earlier copies are freed',
    ).toBe(true);
    for (const name of layerParamNames(model.config, 1)) {
      const v = model.params.get(name) as tf.Variable;
      const a = got.grads[v.name]!.dataSync();
      const b = want.grads[v.name]!.dataSync();
      b.forEach((x, i) => {
        expect(a[i]).toBeCloseTo(x, 5);
      });
    }
  });
});
