import type { TrainingSequence } from '@rl2/rollout';
import { type DecoderModel, tokenLogprobs, tokenValues } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { binBatch } from '../bins/bin-tensors.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { type RolloutBin, scatterBinField } from './rollout-bins.js';

/** Per-sequence arrays `[S][T_i]` of one pass over the rollout. */
export type PerSequence = number[][];

/**
 * log pi(action_t | states_<=t) of every rollout token under `model`, logits divided by the
 * sampling temperature (RL2 scales them the same way), no gradient: the reference and
 * "old" log-prob passes of the PPO step.
 */
export async function rolloutLogps(
  model: DecoderModel,
  bins: readonly RolloutBin[],
  sequences: readonly TrainingSequence[],
  temperature: number,
): Promise<PerSequence> {
  const out: PerSequence = new Array(sequences.length);
  for (const bin of bins) {
    const { logprobs, entropy } = tokenLogprobs(model, binBatch(bin), bin.targets, {
      temperature,
      recompute: false,
    });
    if (!bin.idle) scatterBinField(bin, await logprobs.data(), out, sequences);
    tf.dispose([logprobs, entropy]);
  }
  return out;
}

/** Critic values V(states_<=t) of every rollout token, no gradient (the GAE pass). */
export async function rolloutValues(
  critic: DecoderModel,
  bins: readonly RolloutBin[],
  sequences: readonly TrainingSequence[],
): Promise<PerSequence> {
  const out: PerSequence = new Array(sequences.length);
  for (const bin of bins) {
    const values = tokenValues(critic, binBatch(bin), { recompute: false });
    if (!bin.idle) scatterBinField(bin, await values.data(), out, sequences);
    values.dispose();
  }
  return out;
}

/**
 * After a pass over this rank's bins (its entries of `perSequence` set, the others empty), every
 * rank's entries on every rank: one all-reduce of a zero buffer over all tokens `[sum T_i]` in
 * which each rank fills its sequences (float32 values travel exactly).
 */
export function gatherPerSequence(
  dp: DataParallel,
  perSequence: PerSequence,
  sequences: readonly TrainingSequence[],
): PerSequence {
  if (dp.size === 1) return perSequence;
  const offsets = [0];
  for (const s of sequences) offsets.push((offsets.at(-1) as number) + s.states.length);
  const buf = new Float32Array(offsets.at(-1) as number);
  sequences.forEach((_, i) => {
    const row = perSequence[i];
    if (row) buf.set(row, offsets[i]);
  });
  const sum = dp.allReduceSum(buf);
  return sequences.map((_, i) => Array.from(sum.subarray(offsets[i], offsets[i + 1])));
}
