import type { TokenLayout } from '@rl2/algos';
import type { TokenBatch } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import type { PackedBin } from './pack-bins.js';

/** The bin as the decoder's input: one packed row with restarting positions and segments. */
export function binBatch(bin: PackedBin): TokenBatch {
  return {
    inputIds: bin.inputIds,
    positionIds: bin.positionIds,
    segmentIds: bin.segmentIds,
    rows: 1,
  };
}

/**
 * The bin as @rl2/algos' layout: lossMask [1, T] float32, sequenceIds [1, T] int32, and the same
 * two as host arrays (the losses read which tokens count from there, never from the device).
 */
export function binLayout(bin: PackedBin): Required<TokenLayout> {
  const t = bin.inputIds.length;
  return {
    actionMask: tf.tensor2d(bin.lossMask, [1, t], 'float32'),
    sequenceIds: tf.tensor2d(bin.segmentIds, [1, t], 'int32'),
    host: { actionMask: bin.lossMask, sequenceIds: bin.segmentIds },
  };
}

/** Loss-mask token count per sequence of the bin, [S]. */
export function binSequenceLengths(bin: PackedBin): tf.Tensor1D {
  const counts = new Float32Array(bin.numSequences);
  bin.lossMask.forEach((m, t) => {
    counts[bin.segmentIds[t]] += m;
  });
  return tf.tensor1d(counts);
}
