import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { fusedDecoder } from './fused-decoder.js';
import { createGenerator } from './generator.js';
import type { KvDecoder } from './kv-decoder.js';
import { pagedDecoder } from './paged-decoder.js';

// The paged decoder (block tables into one pool) against the contiguous fused decoder (`AppendKv`,
// left padding) on the same weights: the logits of every prefill and step within 1e-5 and the same
// greedy tokens, for mixed prompt lengths, rows joining and leaving, and rows sharing a prompt;
// and the blocks a shared prompt holds and a leaving row frees.
const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const hasNative = nativeForTests().ok;
const models: Record<string, DecoderModel> = {};

function maxDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
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

/** Prompts left-padded to one length, as the generator passes them. */
function padded(ps: number[][]) {
  const len = Math.max(...ps.map((p) => p.length));
  return {
    tokens: ps.map((p) => [...new Array<number>(len - p.length).fill(0), ...p]),
    positions: ps.map((p) =>
      Array.from({ length: len }, (_, t) => Math.max(0, t - (len - p.length))),
    ),
    pad: ps.map((p) => len - p.length),
  };
}

/** The paged and the contiguous decoder side by side: each call runs both and compares logits. */
function pair(model: DecoderModel, blockSize: number) {
  const paged = pagedDecoder(model, { blockSize, segmentBlocks: 2 })!;
  const ref = fusedDecoder(model)! as KvDecoder<unknown>;
  let kp: ReturnType<typeof paged.merge> | undefined;
  let kr: unknown;
  const compare = (a: Float32Array, b: Float32Array, what: string) => {
    const scale = Math.max(...b.map(Math.abs));
    expect(maxDiff(a, b) / scale, what).toBeLessThan(1e-5);
    expect(argmaxRows(a, a.length / model.config.vocabSize)).toEqual(
      argmaxRows(b, b.length / model.config.vocabSize),
    );
  };
  return {
    paged,
    async join(prompts: number[][]) {
      const p = padded(prompts);
      const a = await paged.prefill(p.tokens, p.positions, p.pad);
      const la = a.logits.slice();
      const b = await ref.prefill(p.tokens, p.positions, p.pad);
      compare(la, b.logits, 'prefill');
      kp = paged.merge(kp, a.kv);
      kr = ref.merge(kr, b.kv);
      return argmaxRows(b.logits, prompts.length);
    },
    async step(tokens: number[], positions: number[], what: string) {
      const a = await paged.step(kp!, tokens, positions);
      const la = a.logits.slice();
      const b = await ref.step(kr, tokens, positions);
      compare(la, b.logits, what);
      kp = a.kv;
      kr = b.kv;
      return argmaxRows(b.logits, tokens.length);
    },
    select(keep: number[]) {
      kp = paged.select(kp!, keep);
      kr = ref.select(kr, keep);
    },
    rows: () => kp?.rows ?? [],
  };
}

describe.skipIf(!hasNative)('pagedDecoder', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    for (const name of ['llama', 'qwen2', 'qwen3'])
      models[name] = (await loadModel(join(FIX, name))).model;
  });

  it.each(['llama', 'qwen2', 'qwen3'])(
    '%s: mixed lengths, rows joining and leaving: the contiguous cache logits and greedy tokens',
    async (name) => {
      const run = pair(models[name]!, 4);
      const prompts = [
        [1, 17, 99, 5, 64],
        [1, 8],
        [1, 120, 33, 2, 91, 60, 7, 7, 100],
        [1, 3, 5, 7],
      ];
      let next = await run.join(prompts.slice(0, 2));
      let pos = [5, 2];
      for (let step = 0; step < 30; step++) {
        if (step === 3) {
          next = [...next, ...(await run.join(prompts.slice(2)))];
          pos = [...pos, 9, 4];
        }
        if (step === 17) {
          run.select([1, 3]);
          next = [next[1]!, next[3]!];
          pos = [pos[1]!, pos[3]!];
        }
        next = await run.step(next, pos, `step ${step}`);
        pos = pos.map((p) => p + 1);
      }
      expect(run.rows().map((r) => r.length)).toEqual([2 + 30, 4 + 27]);
    },
  );

  it.each(['qwen3', 'llama'])(
    '%s: a prompt shared by a group decodes as copies of it, one prefill row and its blocks once',
    async (name) => {
      const model = models[name]!;
      const run = pair(model, 4);
      // a 10-token prompt: blocks of 4, 4 and a shared last block of 2 tokens (copied on write)
      const p = [1, 40, 7, 99, 3, 12, 5, 64, 18, 2];
      const q = [1, 9, 9];
      let next = await run.join([p, p, q, p]);
      expect(run.rows().map((r) => r.blocks)).toEqual([[0, 1, 2], [0, 1, 2], [3], [0, 1, 2]]);
      expect(run.paged.pool.heldBlocks).toBe(4);
      // the group's rows diverge: each takes a different token
      next = next.map((t, i) => (t + 5 * i) % model.config.vocabSize);
      let pos = [10, 10, 3, 10];
      for (let step = 0; step < 12; step++) {
        next = await run.step(next, pos, `step ${step}`);
        pos = pos.map((x) => x + 1);
      }
      const rows = run.rows();
      // the two full prompt blocks stay shared; each group row has its own third block
      for (const r of [0, 1, 3]) expect(rows[r]!.blocks.slice(0, 2)).toEqual([0, 1]);
      expect(new Set([2, rows[0]!.blocks[2], rows[1]!.blocks[2], rows[3]!.blocks[2]]).size).toBe(4);
      // three rows and the held prompt
      expect(run.paged.pool.count(0)).toBe(4);
      // a later prefill of the same prompt (a response of the group joining late) shares its blocks
      const held = run.paged.pool.heldBlocks;
      next = [...next, ...(await run.join([[1, 5], p]))];
      pos = [...pos, 2, 10];
      expect(run.rows()[5]!.blocks).toEqual([0, 1, 2]);
      expect(run.paged.pool.heldBlocks).toBe(held + 1);
      for (let step = 0; step < 4; step++) {
        next = await run.step(next, pos, `after the late join, step ${step}`);
        pos = pos.map((x) => x + 1);
      }
    },
  );

  it.each(['llama', 'qwen3'])(
    '%s: a long prefill (several query tiles, padding across tiles) and its steps',
    async (name) => {
      const model = models[name]!;
      const run = pair(model, 16);
      const prompts = [150, 70, 1, 129].map((n, r) =>
        Array.from({ length: n }, (_, t) => (t * 37 + r * 11 + 1) % model.config.vocabSize),
      );
      let next = await run.join(prompts);
      let pos = [150, 70, 1, 129];
      for (let step = 0; step < 4; step++) {
        next = await run.step(next, pos, `step ${step}`);
        pos = pos.map((p) => p + 1);
      }
    },
  );

  it('a leaving row frees its blocks, and the pool its empty segments', async () => {
    const model = models.qwen3!;
    const paged = pagedDecoder(model, { blockSize: 4, segmentBlocks: 2 })!;
    const pool = paged.pool;
    const group = Array.from({ length: 8 }, () => [1, 40, 7, 99, 3, 12, 5, 64, 18, 2]);
    const p = padded(group);
    const out = await paged.prefill(p.tokens, p.positions, p.pad);
    // eight rows of a 10-token prompt hold its 3 blocks once
    expect(pool.heldBlocks).toBe(3);
    expect(pool.bytes).toBe(
      2 *
        pool.segmentBlocks *
        model.config.numKvHeads *
        4 *
        model.config.headDim *
        4 *
        2 *
        model.config.numLayers,
    );
    let kv = out.kv;
    kv = (await paged.step(kv, [5, 6, 7, 8, 9, 10, 11, 12], new Array(8).fill(10))).kv;
    // the shared partial block: each row copied it (the held prompt keeps it)
    expect(pool.heldBlocks).toBe(3 + 8);
    kv = paged.select(kv, [0, 1])!;
    expect(pool.heldBlocks).toBe(3 + 2);
    paged.select(kv, []);
    expect(pool.heldBlocks).toBe(0);
    expect(pool.segments).toBe(0);
    expect(pool.bytes).toBe(0);
  });

  it.each([0, 1])(
    'the generator at temperature %s: a paged cache gives the tokens of a contiguous one (groups, joining rows)',
    async (temperature) => {
      const model = models.qwen3!;
      // a group of 3 responses per prompt; 3 rows at a time, so rows join as others finish
      const prompts = [
        [1, 17, 99, 5, 64],
        [1, 8],
        [1, 120, 33, 2, 91, 60, 7, 7, 100],
      ].flatMap((p) => [p, p, p]);
      const results = async (kvCache: 'paged' | 'contiguous') => {
        const gen = createGenerator(model, { maxBatch: 3, kvCache, seed: 3 });
        return Promise.all(
          prompts.map((p, i) =>
            gen.generate({
              inputIds: p,
              temperature,
              maxNewTokens: 6 + 3 * (i % 4),
              ignoreEos: true,
            }),
          ),
        );
      };
      const paged = await results('paged');
      const contiguous = await results('contiguous');
      paged.forEach((r, i) => {
        expect(r.outputIds).toEqual(contiguous[i]!.outputIds);
        r.logprobs.forEach((lp, j) => {
          expect(Math.abs(lp - contiguous[i]!.logprobs[j]!)).toBeLessThan(1e-5);
        });
      });
    },
  );
});
