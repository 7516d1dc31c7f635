import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine, kernelDispatches } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { createDecoderModel } from '../model/decoder-model.js';
import { fusedDecoder } from './fused-decoder.js';
import { createGenerator } from './generator.js';
import { tfjsDecoder } from './kv-decoder.js';

// The fused native prefill and decode step (one addon call each) against the tfjs path
// (`cachedForward`, unfused ops) on the same backend: logits of prefill and of every step,
// with rows joining (merge) and leaving (select) between steps.
const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const hasNative = nativeForTests().ok;
const models: Record<string, DecoderModel> = {};

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function argmaxRows(logits: Float32Array, rows: number): number[] {
  const v = logits.length / rows;
  return Array.from({ length: rows }, (_, r) => {
    let best = 0;
    for (let j = 1; j < v; j++) if (logits[r * v + j]! > logits[r * v + best]!) best = j;
    return best;
  });
}

describe.skipIf(!hasNative)('fusedDecoder', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    for (const name of ['llama', 'qwen2', 'qwen3'])
      models[name] = (await loadModel(join(FIX, name))).model;
  });

  it.each(['llama', 'qwen2', 'qwen3'])(
    '%s: prefill and steps with rows joining and leaving equal the tfjs path',
    async (name) => {
      const model = models[name]!;
      const fused = fusedDecoder(model)!;
      expect(fused).toBeDefined();
      const ref = tfjsDecoder(model);
      const before = tf.memory().numTensors;
      const prompts = [
        [1, 17, 99, 5, 64],
        [1, 8],
        [1, 120, 33, 2, 91, 60, 7, 7, 100],
      ];
      const pad = (ps: number[][]) => {
        const len = Math.max(...ps.map((p) => p.length));
        return {
          tokens: ps.map((p) => [...new Array<number>(len - p.length).fill(0), ...p]),
          positions: ps.map((p) =>
            Array.from({ length: len }, (_, t) => Math.max(0, t - (len - p.length))),
          ),
          pad: ps.map((p) => len - p.length),
        };
      };
      const first = pad(prompts.slice(0, 2));
      const pf = await fused.prefill(first.tokens, first.positions, first.pad);
      const pr = await ref.prefill(first.tokens, first.positions, first.pad);
      expect(maxDiff(pf.logits, pr.logits)).toBeLessThan(1e-4);
      let kf = fused.merge(undefined, pf.kv);
      let kr = ref.merge(undefined, pr.kv);
      let next = argmaxRows(pr.logits, 2);
      let pos = prompts.slice(0, 2).map((p) => p.length);
      for (let step = 0; step < 40; step++) {
        if (step === 3) {
          // a third row joins with a longer prompt
          const third = pad([prompts[2]!]);
          const jf = await fused.prefill(third.tokens, third.positions, third.pad);
          const jr = await ref.prefill(third.tokens, third.positions, third.pad);
          kf = fused.merge(kf, jf.kv);
          kr = ref.merge(kr, jr.kv);
          next = [...next, ...argmaxRows(jr.logits, 1)];
          pos = [...pos, prompts[2]!.length];
        }
        if (step === 20) {
          // the first row leaves
          kf = fused.select(kf, [1, 2])!;
          kr = ref.select(kr, [1, 2])!;
          next = next.slice(1);
          pos = pos.slice(1);
        }
        const sf = await fused.step(kf, next, pos);
        const sr = await ref.step(kr, next, pos);
        expect(maxDiff(sf.logits, sr.logits), `step ${step}`).toBeLessThan(1e-4);
        kf = sf.kv;
        kr = sr.kv;
        next = argmaxRows(sr.logits, next.length);
        pos = pos.map((p) => p + 1);
      }
      fused.dispose(kf);
      ref.dispose(kr);
      expect(tf.memory().numTensors).toBe(before);
    },
  );

  it.each(['llama', 'qwen3'])(
    '%s: a long prefill (several tiles and chunks, padding across a tile) equals the tfjs path',
    async (name) => {
      // 3 rows of 150, 70 and 1 tokens: 450 tokens (two projection chunks of 256), query and
      // key tiles of 64 with a left pad of 80 and of 149 running across tile boundaries
      const model = models[name]!;
      const fused = fusedDecoder(model)!;
      const ref = tfjsDecoder(model);
      const lens = [150, 70, 1];
      const len = 150;
      const tokens = lens.map((n, r) => [
        ...new Array<number>(len - n).fill(0),
        ...Array.from({ length: n }, (_, t) => (t * 37 + r * 11 + 1) % model.config.vocabSize),
      ]);
      const positions = lens.map((n) =>
        Array.from({ length: len }, (_, t) => Math.max(0, t - (len - n))),
      );
      const pad = lens.map((n) => len - n);
      const pf = await fused.prefill(tokens, positions, pad);
      const pr = await ref.prefill(tokens, positions, pad);
      const scale = Math.max(...pr.logits.map(Math.abs));
      expect(maxDiff(pf.logits, pr.logits) / scale).toBeLessThan(1e-5);
      // the cache the prefill wrote decodes as the tfjs one does
      let kf = fused.merge(undefined, pf.kv);
      let kr = ref.merge(undefined, pr.kv);
      let next = argmaxRows(pr.logits, 3);
      for (let step = 0; step < 4; step++) {
        const sf = await fused.step(kf, next, [150 + step, 70 + step, 1 + step]);
        const sr = await ref.step(kr, next, [150 + step, 70 + step, 1 + step]);
        expect(maxDiff(sf.logits, sr.logits) / scale, `step ${step}`).toBeLessThan(1e-5);
        kf = sf.kv;
        kr = sr.kv;
        next = argmaxRows(sr.logits, 3);
      }
      ref.dispose(kr);
    },
  );

  it('a prefill is one dispatch', async () => {
    const model = models.llama!;
    const fused = fusedDecoder(model)!;
    const before = kernelDispatches();
    await fused.prefill([[1, 2, 3, 4, 5, 6]], [[0, 1, 2, 3, 4, 5]], [0]);
    expect(kernelDispatches() - before).toBe(1);
  });

  it('a decode step is one dispatch', async () => {
    const model = models.llama!;
    const fused = fusedDecoder(model)!;
    const out = await fused.prefill([[1, 2, 3]], [[0, 1, 2]], [0]);
    const before = kernelDispatches();
    await fused.step(out.kv, [4], [3]);
    expect(kernelDispatches() - before).toBe(1);
  });

  it('models with replaced linear layers take the tfjs path', () => {
    const model = models.llama!;
    const custom = createDecoderModel(model.config, model.params, {
      linear: (n, p) => model.linear(n, p),
    });
    expect(fusedDecoder(custom)).toBeUndefined();
  });

  it.each([0, 1])(
    'the generator on native samples at temperature %s as on the tfjs path',
    async (temperature) => {
      const model = models.qwen3!;
      const req = { temperature, maxNewTokens: 12, ignoreEos: true };
      const gen = createGenerator(model, { maxBatch: 2 });
      const prompts = [
        [1, 17, 99, 5, 64],
        [1, 8],
        [1, 120, 33, 2, 91, 60, 7, 7, 100],
      ];
      const results = await Promise.all(prompts.map((p) => gen.generate({ ...req, inputIds: p })));
      const slow = createGenerator(model, { maxBatch: 2, fusedDecode: false });
      const refs = await Promise.all(prompts.map((p) => slow.generate({ ...req, inputIds: p })));
      results.forEach((r, i) => {
        expect(r.outputIds).toEqual(refs[i]!.outputIds);
        r.logprobs.forEach((lp, j) => {
          expect(Math.abs(lp - refs[i]!.logprobs[j]!)).toBeLessThan(1e-5);
        });
      });
    },
  );
});
