import { join, resolve } from 'node:path';
import { initEngine } from '@rl2/engine';
import { type DecoderModel, loadModel } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { type PackedBin, packBins, type StepTotals, stepTotals } from '../bins/pack-bins.js';
import type { TrainingItem } from '../dataset/training-item.js';
import { writeRandomCheckpoint } from '../model-init/random-checkpoint.js';
import { sftObjective } from '../sft/sft-objective.js';
import { accumulateGradients } from './gradient-step.js';
import type { Objective } from './objective.js';

let plain: DecoderModel;
let tied: DecoderModel;

async function model(
  name: string,
  o: { vocabSize?: number; tie: boolean; hidden: number; inter: number; layers: number },
) {
  const dir = join(tempDir('rl2-grads-into-'), name);
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir: resolve(import.meta.dirname, '../../test/fixtures/char-tokenizer'),
    outDir: dir,
    hiddenSize: o.hidden,
    intermediateSize: o.inter,
    numLayers: o.layers,
    numHeads: 2,
    maxPositionEmbeddings: 8, // small RoPE tables: the gradients are what the peak is made of
    tieWordEmbeddings: o.tie,
    vocabSize: o.vocabSize,
    seed: 5,
  });
  return (await loadModel(dir)).model;
}

beforeAll(async () => {
  await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
  plain = await model('plain', { tie: false, hidden: 128, inter: 384, layers: 2 });
  // more rows than one 8192-row vocabulary chunk: the tied LM head's own gradient path
  tied = await model('tied', { vocabSize: 8300, tie: true, hidden: 64, inter: 1024, layers: 4 });
});

/** Short sequences (parameters outweigh activations), loss on their second half. */
function items(lens: number[]): TrainingItem[] {
  return lens.map((n, s) => ({
    origin: `row ${s}`,
    sequences: [
      {
        inputIds: Array.from({ length: n }, (_, i) => 3 + ((i * 7 + s * 13) % 90)),
        positionIds: Array.from({ length: n }, (_, i) => i),
        targets: Array.from({ length: n }, (_, i) => 3 + ((i * 5 + s * 11) % 90)),
        lossMask: Array.from({ length: n }, (_, i) => (i >= n / 2 ? 1 : 0)),
      },
    ],
  }));
}

/** The accumulation as it was: each bin's whole gradient set, then added to the running set. */
function summedAfterwards<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
  params: Record<string, tf.Variable>,
): Record<string, tf.Tensor> {
  const byVar = new Map(Object.entries(params).map(([name, v]) => [v.name, name]));
  const grads: Record<string, tf.Tensor> = {};
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    const { value, grads: g } = tf.variableGrads(
      () => objective.loss(bin, totals, prepared).loss,
      Object.values(params),
    );
    if (prepared !== undefined) objective.release?.(prepared);
    value.dispose();
    for (const [varName, grad] of Object.entries(g)) {
      const name = byVar.get(varName) as string;
      const prev = grads[name];
      grads[name] = prev ? tf.add(prev, grad) : grad;
      if (prev) tf.dispose([prev, grad]);
    }
  }
  return grads;
}

/**
 * Peak bytes of the distinct tensor buffers that `f` allocates over those alive before. tfjs's own
 * numBytes (and tf.profile's peakBytes) counts a buffer again for every tensor sharing it: the
 * clones the tape saves, reshapes.
 */
async function peakBufferBytes(f: () => void | Promise<void>): Promise<number> {
  const info = (
    tf.engine() as unknown as { state: { tensorInfo: WeakMap<object, { bytes: number }> } }
  ).state.tensorInfo;
  let now = 0;
  let peak = 0;
  const { set, delete: del } = WeakMap.prototype;
  info.set = function (k, v) {
    if (!this.has(k)) {
      now += v.bytes;
      peak = Math.max(peak, now);
    }
    return set.call(this, k, v) as typeof info;
  };
  info.delete = function (k) {
    now -= this.get(k)?.bytes ?? 0;
    return del.call(this, k);
  };
  try {
    await f();
  } finally {
    Reflect.deleteProperty(info, 'set');
    Reflect.deleteProperty(info, 'delete');
  }
  return peak;
}

describe('accumulateGradients keeps one running gradient set', () => {
  // What the backward still holds next to the running sums: a recomputed layer's backward yields
  // all its parameters' gradients at once (`held`: one layer's); with a tied table the head's
  // [V, H] gradient is alive from the start of the backward to the lookup, its last node, next
  // to the running sums and a layer's gradients: there the peak only has to drop.
  it.each([
    ['untied, recomputed layers', () => plain, true, 'model.layers.0.'],
    ['untied', () => plain, false, undefined],
    ['tied embeddings over a vocabulary chunk, recomputed layers', () => tied, true, 'tied'],
  ] as const)(
    '%s: same gradients as summing afterwards, one gradient set less at the peak',
    async (_, m, recompute, held) => {
      const params = Object.fromEntries(m().params);
      const bytes = (prefix: string) =>
        4 *
        Object.entries(params)
          .filter(([n]) => n.startsWith(prefix))
          .reduce((a, [, v]) => a + v.size, 0);
      const gradBytes = bytes('');
      const mustSave = held === 'tied' ? 1 : 0.9 * (gradBytes - (held ? bytes(held) : 0));
      const objective = sftObjective(m(), { avgLevel: 'token', recompute });
      const bins = packBins(items([3, 2, 3, 2]), 3, 1, 'test');
      expect(bins.length).toBe(4);
      const totals = stepTotals(bins);

      const tensorsBefore = tf.memory().numTensors;
      const values = (grads: Record<string, tf.Tensor>) => {
        const out = Object.fromEntries(
          Object.entries(grads).map(([k, g]) => [k, g.dataSync().slice()]),
        );
        tf.dispose(Object.values(grads));
        return out;
      };
      let before: Record<string, Float32Array | Int32Array | Uint8Array> = {};
      const oldPeak = await peakBufferBytes(() => {
        before = values(summedAfterwards(bins, totals, objective, params));
      });
      let now: Record<string, Float32Array | Int32Array | Uint8Array> = {};
      const peak = await peakBufferBytes(async () => {
        now = values((await accumulateGradients(bins, totals, objective, params)).grads);
      });
      expect(tf.memory().numTensors).toBe(tensorsBefore);

      expect(Object.keys(now).sort()).toEqual(Object.keys(before).sort());
      let maxAbs = 0;
      let maxDiff = 0;
      for (const [name, a] of Object.entries(before)) {
        const b = now[name]!;
        for (let i = 0; i < a.length; i++) {
          maxAbs = Math.max(maxAbs, Math.abs(a[i]!));
          maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
        }
      }
      expect(maxAbs).toBeGreaterThan(1e-4);
      // the same sums in the same order; a variable read twice (the tied table) adds its parts in another order
      expect(maxDiff).toBeLessThanOrEqual(1e-6 * maxAbs);
      // the old way holds a second gradient set while it adds
      expect(peak).toBeLessThan(oldPeak - mustSave);
    },
  );
});
