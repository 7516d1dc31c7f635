import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { cachedForward } from '../generation/cached-forward.js';
import { tokenLogprobs } from '../heads/token-logprobs.js';
import { createDecoderModel, type DecoderModel } from '../model/decoder-model.js';
import { initRandomModel } from '../model/init-random-model.js';
import { packSequences, type TokenBatch } from '../model/token-batch.js';
import { groupedQueryAttention } from './attention.js';

// The model on `native` runs the tiled attention kernel (no mask, no T x T scores) for training
// and prefill; the same model with the kernel wrapped (so the model cannot recognise the default
// and falls back to the one-call attention over an explicit [rows, T, T] mask) is the unfused
// path. Both must give the same logprobs and parameter gradients, over rows longer than one
// tile (64), grouped-query heads, packed sequences with restarting position ids, and
// left-padded prefill rows.
const hasNative = nativeForTests().ok;

/** Same weights, attention no longer `groupedQueryAttention` itself: the masked path. */
function unfused(model: DecoderModel): DecoderModel {
  return createDecoderModel(model.config, model.params, {
    attention: (q, k, v, m) => groupedQueryAttention(q, k, v, m),
  });
}

function maxRel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / Math.max(m, 1e-12);
}

/** Logprobs and every parameter gradient of a weighted logprob loss. */
function lossAndGrads(
  model: DecoderModel,
  batch: TokenBatch,
  targets: number[],
  recompute: boolean,
) {
  const w = tf.tensor1d(targets.map((_, i) => ((i * 7) % 5) - 2));
  let logprobs: Float32Array = new Float32Array();
  const { value, grads } = tf.variableGrads(() => {
    const out = tokenLogprobs(model, batch, targets, { recompute });
    logprobs = out.logprobs.dataSync() as Float32Array;
    return tf.add(tf.sum(tf.mul(w, out.logprobs)), tf.mul(0.1, tf.sum(out.entropy))) as tf.Scalar;
  }, [...model.params.values()]);
  const g = new Map(
    [...model.params].map(([name, v]) => [name, grads[v.name]!.dataSync() as Float32Array]),
  );
  tf.dispose([w, value, ...Object.values(grads)]);
  return { logprobs, grads: g };
}

const FLASH = 'Rl2FlashAttention';

describe.skipIf(!hasNative)('tiled attention in the model equals the masked path', () => {
  let model: DecoderModel;
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    // qwen3: q/k norms; 4 query heads over 2 kv heads
    model = initRandomModel(
      {
        family: 'qwen3',
        vocabSize: 61,
        hiddenSize: 32,
        intermediateSize: 48,
        numLayers: 2,
        numHeads: 4,
        numKvHeads: 2,
        headDim: 8,
        initializerRange: 0.2,
      },
      5,
    );
  });

  const packed = packSequences(
    [70, 45, 1, 34].map((n, s) => Array.from({ length: n }, (_, i) => (i * 13 + s * 7 + 3) % 61)),
  );
  const rows: TokenBatch = {
    // two rows of 100: one sequence, then three (one id reappearing after another: not contiguous)
    inputIds: Array.from({ length: 200 }, (_, i) => (i * 29 + 11) % 61),
    positionIds: [
      ...Array.from({ length: 100 }, (_, i) => i),
      ...Array.from({ length: 100 }, (_, i) => (i < 40 ? i : i < 80 ? i - 40 : i - 80)),
    ],
    segmentIds: [
      ...new Array(100).fill(0),
      ...Array.from({ length: 100 }, (_, i) => (i < 40 ? 4 : i < 80 ? 2 : 4)),
    ],
    rows: 2,
  };
  it.each([
    ['one packed row of 4 sequences (150 tokens), recompute=false', packed, false],
    ['one packed row of 4 sequences (150 tokens), recompute=true', packed, true],
    ['two rows of 100, segments not contiguous, recompute=false', rows, false],
  ] as const)('%s: logprobs and all gradients within 1e-5 relative', (_, batch, recompute) => {
    const targets = Array.from(batch.inputIds, (t, i) => (t * 3 + i) % 61);
    const { kernelCalls, result: flash } = countFlash(() =>
      lossAndGrads(model, batch, targets, recompute),
    );
    const ref = countFlash(() => lossAndGrads(unfused(model), batch, targets, recompute));
    expect(ref.kernelCalls).toBe(0);
    expect(kernelCalls).toBe(model.config.numLayers * (recompute ? 2 : 1));
    expect(maxRel(flash.logprobs, ref.result.logprobs)).toBeLessThanOrEqual(1e-5);
    for (const [name, g] of ref.result.grads)
      expect(maxRel(flash.grads.get(name)!, g), name).toBeLessThanOrEqual(1e-5);
  });

  it('prefill of left-padded rows: same next-token logits and cache at real positions', () => {
    const tokens = [
      Array.from({ length: 90 }, (_, i) => (i * 5 + 1) % 61),
      Array.from({ length: 90 }, (_, i) => (i * 11 + 2) % 61),
    ];
    const pad = [0, 23];
    const positions = pad.map((p) => Array.from({ length: 90 }, (_, i) => Math.max(0, i - p)));
    const { kernelCalls, result: a } = countFlash(() =>
      cachedForward(model, tokens, positions, pad),
    );
    const b = cachedForward(unfused(model), tokens, positions, pad);
    expect(kernelCalls).toBe(model.config.numLayers);
    expect(maxRel(a.logits.dataSync(), b.logits.dataSync())).toBeLessThanOrEqual(1e-5);
    // keys/values at real (non-pad) columns are what later decode steps read
    for (let l = 0; l < model.config.numLayers; l++) {
      for (const which of ['k', 'v'] as const) {
        const real = (t: tf.Tensor4D) =>
          tf.tidy(() => tf.slice(t, [1, 0, pad[1]!, 0], [1, -1, -1, -1]).dataSync());
        expect(
          maxRel(real(a.kv.layers[l]![which]), real(b.kv.layers[l]![which])),
        ).toBeLessThanOrEqual(1e-5);
      }
    }
    tf.dispose([
      a.logits,
      b.logits,
      ...a.kv.layers.flatMap((l) => [l.k, l.v]),
      ...b.kv.layers.flatMap((l) => [l.k, l.v]),
    ]);
  });
});

/** How many times the tiled forward kernel ran during `f`. */
function countFlash<T>(f: () => T): { kernelCalls: number; result: T } {
  let kernelCalls = 0;
  const eng = tf.engine() as unknown as {
    runKernel: (name: string, ...rest: unknown[]) => unknown;
  };
  const orig = eng.runKernel;
  eng.runKernel = function (name: string, ...rest: unknown[]) {
    if (name === FLASH) kernelCalls++;
    return orig.call(this, name, ...rest);
  };
  try {
    const result = f();
    return { kernelCalls, result };
  } finally {
    eng.runKernel = orig;
  }
}
