import { type FrozenMatrix, readValuesNow } from '@rl2/engine';
import { frozenRowsGather } from '@rl2/models';
import { type ProcessGroup, reduceFromTensorParallel, vocabRange } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';

/**
 * The vocab-parallel embedding lookup of a frozen 16-bit table (a LoRA base kept as stored):
 * each rank widens the rows of `ids` [N] in its vocabulary shard `tableShard` [V/tp, H] (zeros
 * for the others) and the [N, H] parts are summed over tp, as `vocabParallelEmbedding` does for
 * a float32 shard. The table is a constant: no gradient reaches it.
 */
export function frozenVocabParallelEmbedding(
  ids: tf.Tensor1D,
  tableShard: FrozenMatrix,
  vocabSize: number,
  tp: ProcessGroup,
): tf.Tensor2D {
  const [start, end] = vocabRange(vocabSize, tp);
  const host = readValuesNow(ids); // token ids come from the host batch: no device wait
  const mine = (id: number) => id >= start && id < end;
  const local = tf.tidy(() =>
    tf.mul(
      frozenRowsGather(
        tableShard,
        Int32Array.from(host, (id) => (mine(id) ? id - start : 0)),
      ),
      tf.tensor2d(
        Float32Array.from(host, (id) => (mine(id) ? 1 : 0)),
        [host.length, 1],
      ),
    ),
  );
  return reduceFromTensorParallel(local, tp) as tf.Tensor2D;
}
