import * as tf from '@tensorflow/tfjs-core';
import type { DecoderModel } from '../model/decoder-model.js';
import type { BatchStepper, SamplingRow } from './batch-stepper.js';
import { cachedForward, disposeKv, type KvBatch, mergeKv, selectKvRows } from './cached-forward.js';
import { sampleOnDevice, unpackSampled } from './device-sampling.js';
import type { SampledToken } from './sample-token.js';

/** Prompts that are the same row (tokens and padding) share one prefill row: `unique` rows and each row's one. */
export function sharedRows(tokens: number[][], pad: number[]): { unique: number[]; of: number[] } {
  const seen = new Map<string, number>();
  const unique: number[] = [];
  const of = tokens.map((row, r) => {
    const key = `${pad[r]}:${row.join(',')}`;
    let at = seen.get(key);
    if (at === undefined) {
      at = unique.length;
      seen.set(key, at);
      unique.push(r);
    }
    return at;
  });
  return { unique, of };
}

/** Samples `logits` [B, V] on the device and reads the tokens back: one read. Consumes `logits`. */
async function sampleAndRead(
  logits: tf.Tensor2D,
  rows: readonly SamplingRow[],
): Promise<(SampledToken | undefined)[]> {
  const { packed, n } = sampleOnDevice(logits, rows);
  logits.dispose();
  try {
    return unpackSampled((await packed.data()) as Float32Array, rows, n);
  } finally {
    packed.dispose();
  }
}

/**
 * The stepper of a device backend (webgpu): `cachedForward` with the KV cache as device tensors
 * ([B, nKv, L, d] per layer, a short recent tail appended per step), sampling on the device
 * (`sampleOnDevice`), and one read back per prefill or step: the sampled ids with their
 * log-probabilities, never the logits. Rows of one prompt sent together (a group of responses)
 * are prefilled once and their cache rows copied on the device.
 */
export function deviceStepper(model: DecoderModel): BatchStepper {
  let kv: KvBatch | undefined;
  return {
    async prefill(tokens, positions, pad, rows) {
      const { unique, of } = sharedRows(tokens, pad);
      const out = cachedForward(
        model,
        unique.map((r) => tokens[r]!),
        unique.map((r) => positions[r]!),
        unique.map((r) => pad[r]!),
      );
      let fresh = out.kv;
      let logits = out.logits;
      if (unique.length < tokens.length) {
        fresh = selectKvRows(fresh, of)!;
        const all = tf.tidy(() => tf.gather(logits, tf.tensor1d(of, 'int32')) as tf.Tensor2D);
        logits.dispose();
        logits = all;
      }
      kv = mergeKv(kv, fresh);
      return sampleAndRead(logits, rows);
    },
    async step(tokens, positions, rows) {
      const past = kv!;
      const out = cachedForward(
        model,
        tokens.map((t) => [t]),
        positions.map((p) => [p]),
        tokens.map(() => 0),
        past,
      );
      disposeKv(past, out.kv);
      kv = out.kv;
      return sampleAndRead(out.logits, rows);
    },
    select(keep) {
      if (kv) kv = selectKvRows(kv, keep);
    },
    reset() {
      disposeKv(kv);
      kv = undefined;
    },
  };
}
