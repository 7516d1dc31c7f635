import '@tensorflow/tfjs-backend-cpu';
import '@tensorflow/tfjs'; // registers gradients
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { fixture, relErr, tensor } from '../../test/fixture.js';
import { LocalProcessGroup } from '../comm/local-process-group.js';
import { adamwShardStep, createAdamWShardState } from './adamw-shard.js';
import { flattenParams, planFlatParams, shardOf, unflattenParams } from './flat-params.js';
import { FullyShardedParams } from './fsdp.js';

describe('flat parameters', () => {
  it('pads to equal shards and round-trips', () => {
    const layout = planFlatParams({ a: [2, 3], b: [5] }, 4);
    expect(layout).toMatchObject({ offsets: [0, 6], numel: 11, shardSize: 3, paddedNumel: 12 });
    const a = tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3]);
    const b = tf.tensor1d([7, 8, 9, 10, 11]);
    const flat = flattenParams({ a, b }, layout);
    expect([...shardOf(flat, layout, 3)]).toEqual([10, 11, 0]);
    const back = unflattenParams(flat, layout);
    expect([...back.a!.dataSync()]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(back.b!.shape).toEqual([5]);
  });

  it('names a misshapen parameter', () => {
    const layout = planFlatParams({ 'layers.0.w': [2, 2] }, 2);
    expect(() => flattenParams({ 'layers.0.w': tf.zeros([3, 2]) }, layout)).toThrow(
      /"layers.0.w" has shape \[3, 2\] but the layout expects \[2, 2\]/,
    );
    expect(() => flattenParams({}, layout)).toThrow(/"layers.0.w" is missing/);
  });
});

describe('FullyShardedParams on one process', () => {
  it('one step (clip by global norm, AdamW) equals torch', () => {
    tf.setBackend('cpu');
    const f = fixture('train_step.json');
    const init = Object.fromEntries(
      Object.entries(f.init).map(([k, s]) => [k, tensor(s as never)]),
    );
    const fsdp = FullyShardedParams.fromFull(init, { fsdp: new LocalProcessGroup() });
    const p = fsdp.gather(0);
    const x = tensor(f.x);
    const y = tensor(f.y);
    const names = Object.keys(init);
    const lossOf = (...ts: tf.Tensor[]) => {
      const [w1, b1, w2, b2] = ts as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
      const pred = tf.add(
        tf.matMul(tf.tanh(tf.add(tf.matMul(x, w1, false, true), b1)), w2, false, true),
        b2,
      );
      return tf.div(tf.sum(tf.square(tf.sub(pred, y))), x.shape[0]!) as tf.Scalar;
    };
    const { value, grads } = tf.valueAndGrads(lossOf)(names.map((n) => p[n]!));
    fsdp.reduceGrads(0, Object.fromEntries(names.map((n, i) => [n, grads[i]!])));
    const norm = fsdp.clipGradNorm(1);
    const u = fsdp.units[0]!;
    const hp = f.hparams;
    adamwShardStep(u.params, u.grads, createAdamWShardState(u.params.length), {
      lr: hp.lr,
      weightDecay: hp.weight_decay,
    });
    expect(relErr([value.dataSync()[0]!], [f.loss])).toBeLessThan(1e-6);
    expect(relErr([norm], [f.grad_norm])).toBeLessThan(1e-6);
    const after = fsdp.gatherAll();
    for (const n of names) expect(relErr(after[n]!, tensor(f.updated[n])), n).toBeLessThan(1e-5);
  });
});
