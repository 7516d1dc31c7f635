import {
  checkTensorParallelSizes,
  type ProcessGroup,
  shardForTensorParallel,
  tensorParallelLinearFactory,
  vocabParallelEmbedding,
} from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import { createDecoderModel, type DecoderModel } from '../model/decoder-model.js';
import type { ParamMap } from '../model/param-map.js';
import { paramShapes } from '../model/param-shapes.js';
import { CheckpointReader } from './checkpoint-reader.js';
import { type LoadedModel, readGenerationConfig, readModelConfig } from './load-checkpoint.js';

/** This rank's shard of every parameter, read one full tensor at a time. */
function readShards(dir: string, config: ModelConfig, tp: ProcessGroup): ParamMap {
  const reader = CheckpointReader.open(dir);
  const params: ParamMap = new Map();
  try {
    for (const [name, shape] of paramShapes(config)) {
      if (!reader.entry(name))
        throw new ModelsError('CHECKPOINT_ERROR', `${dir}: missing tensor "${name}"`);
      const w = reader.read(name);
      if (w.shape.join(',') !== shape.join(','))
        throw new ModelsError(
          'SHAPE_MISMATCH',
          `${dir}: tensor "${name}" has shape [${w.shape}], config.json implies [${shape}]`,
        );
      const full = tf.tensor(w.data, shape);
      const shard = shardForTensorParallel(new Map([[name, full]]), tp).get(name) as tf.Tensor;
      params.set(name, tf.variable(shard, false));
      tf.dispose([full, shard]);
    }
  } catch (err) {
    for (const v of params.values()) v.dispose();
    throw err;
  } finally {
    reader.close();
  }
  return params;
}

/**
 * This tp rank's Megatron shards of a causal-LM checkpoint folder, for tensor-parallel
 * generation (`rl2 serve --tp N`; drive it with `tensorParallelStepper` on group rank 0 and
 * `followTensorParallel` on the others). Column-parallel q/k/v/gate/up, row-parallel o/down,
 * embedding and LM head split by vocabulary (its logits are this rank's vocabulary columns),
 * norms whole: the same shards as `shardForTensorParallel`. Each tensor is read whole, sliced,
 * and only the slice kept, so memory peaks at the shards plus one full tensor.
 */
export async function loadTensorParallelModel(dir: string, tp: ProcessGroup): Promise<LoadedModel> {
  const config = await readModelConfig(dir);
  if (config.head !== 'causal-lm')
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `${dir}: ${config.architecture} is not a causal LM; tensor-parallel generation needs one`,
    );
  try {
    checkTensorParallelSizes(config, tp.size);
  } catch (err) {
    throw new ModelsError('SHAPE_MISMATCH', `${dir} at tp=${tp.size}: ${(err as Error).message}`);
  }
  const vocab = config.vocabSize;
  const model: DecoderModel = createDecoderModel(config, readShards(dir, config, tp), {
    linear: tensorParallelLinearFactory(tp),
    embedding: (ids, p) =>
      vocabParallelEmbedding(ids, p.get('model.embed_tokens.weight') as tf.Tensor2D, vocab, tp),
  });
  return { model, generationConfig: await readGenerationConfig(dir) };
}
