import * as tf from '@tensorflow/tfjs-core';
import { ModelsError } from '../errors.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { type ForwardOptions, forwardHidden } from '../model/forward-hidden.js';
import type { TokenBatch } from '../model/token-batch.js';

/**
 * Scalar value per token from a `*ForTokenClassification` model with one label (critic or
 * reward model): `values = h score.weight^T + score.bias`, [N], differentiable.
 */
export function tokenValues(
  passModel: DecoderModel,
  batch: TokenBatch,
  options: ForwardOptions = {},
): tf.Tensor1D {
  const model = passModel.forPass?.() ?? passModel;
  if (!model.params.has('score.weight')) {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `tokenValues: ${model.config.architecture} has no "score.weight"; load the model as a value model (head: 'value')`,
    );
  }
  // context parallelism: this rank's tokens of the row, gathered back into row order
  const shard = model.splitRow?.(batch);
  return tf.tidy(() => {
    const hidden = shard
      ? forwardHidden({ ...model, attention: shard.attention }, shard.batch, options)
      : forwardHidden(model, batch, options);
    const b = model.params.get('score.bias');
    const v = tf.matMul(hidden, model.params.get('score.weight') as tf.Tensor2D, false, true);
    const values = tf.reshape(b ? tf.add(v, b) : v, [-1]) as tf.Tensor1D;
    return shard ? shard.gather(values) : values;
  });
}
