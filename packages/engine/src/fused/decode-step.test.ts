import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '../init-engine.js';
import { nativeForTests } from '../testing/native-for-tests.js';
import {
  type DecodeLayerWeights,
  decodeKernels,
  prepareDecodeModel,
  type WeightDtype,
} from './fused-decode.js';

// `forward` (native decodeStep: the embedding, every layer, the final norm and the head in one
// call) against the per-layer calls it replaces (`layer`, then `rmsNorm` and `linear` on each
// row's last token): the same logits and caches within 1e-5, for a prefill of several tokens per
// row (left padding) and a decode step, float32 and bfloat16 weights.
const hasNative = nativeForTests().ok;

/** Deterministic values in [-scale, scale) (a linear congruential stream). */
function values(n: number, seed: number, scale = 0.5): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 31 - 1) * scale;
  }
  return out;
}

/** bfloat16 bits (round to nearest even). */
function bf16(x: Float32Array): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  return Uint16Array.from(u, (b) => ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff);
}

const B = 2;
const H = 48;
const nH = 4;
const nKv = 2;
const d = 16;
const F = 80;
const V = 70;
const L = 2;
const CAP = 12;
const dims = { rows: B, hidden: H, heads: nH, kvHeads: nKv, headDim: d, intermediate: F };

function layerWeights(l: number, dtype: WeightDtype): DecodeLayerWeights {
  const m = (n: number, seed: number) => {
    const w = values(n, seed + 100 * l, 0.3);
    return dtype === 'float32' ? w : bf16(w);
  };
  const norm = (seed: number) => values(H, seed + 100 * l, 0.2).map((v) => 1 + v);
  return {
    inputNorm: norm(1),
    q: m(nH * d * H, 2),
    k: m(nKv * d * H, 3),
    v: m(nKv * d * H, 4),
    qNorm: values(d, 5 + 100 * l, 0.2).map((v) => 1 + v),
    kNorm: values(d, 6 + 100 * l, 0.2).map((v) => 1 + v),
    o: m(H * nH * d, 7),
    postNorm: norm(8),
    gate: m(F * H, 9),
    up: m(F * H, 10),
    down: m(H * F, 11),
  };
}

function rope(positions: number[]): { cos: Float32Array; sin: Float32Array } {
  const cos = new Float32Array(positions.length * d);
  const sin = new Float32Array(positions.length * d);
  positions.forEach((p, t) => {
    for (let i = 0; i < d / 2; i++) {
      const a = p / 10000 ** ((2 * i) / d);
      cos[t * d + i] = cos[t * d + i + d / 2] = Math.cos(a);
      sin[t * d + i] = sin[t * d + i + d / 2] = Math.sin(a);
    }
  });
  return { cos, sin };
}

const caches = () =>
  Array.from({ length: L }, () => ({
    k: new Float32Array(B * nKv * CAP * d),
    v: new Float32Array(B * nKv * CAP * d),
  }));

function maxRelDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++)
    m = Math.max(m, Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!)));
  return m;
}

describe.skipIf(!hasNative)('decode forward (one call per step)', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  it.each(['float32', 'bfloat16'] as const)(
    '%s: a prefill and a step equal the per-layer calls within 1e-5',
    (dtype) => {
      const k = decodeKernels()!;
      const embed = values(V * H, 20);
      const finalNorm = values(H, 21, 0.2).map((v) => 1 + v);
      const headF = values(V * H, 22, 0.3);
      const head = dtype === 'float32' ? headF : bf16(headF);
      const layers = Array.from({ length: L }, (_, l) => layerWeights(l, dtype));
      const model = prepareDecodeModel({ embed, layers, finalNorm, head }, dtype);
      const padLeft = Int32Array.of(0, 2);
      const S = 5;
      const tokens = [3, 14, 15, 9, 2, 0, 0, 65, 35, 8];
      const positions = [0, 1, 2, 3, 4, 0, 0, 0, 1, 2];
      const mine = caches();
      const ref = caches();
      const run = (ids: number[], pos: number[], s: number, length: number) => {
        const { cos, sin } = rope(pos);
        const logits = new Float32Array(B * V);
        const c = {
          k: mine.map((x) => x.k),
          v: mine.map((x) => x.v),
          capacity: CAP,
          length,
          padLeft,
        };
        k.forward(
          model,
          Int32Array.from(ids),
          { ...dims, tokens: s, vocab: V },
          1e-6,
          cos,
          sin,
          c,
          logits,
        );
        // the same through per-layer calls
        const x = new Float32Array(ids.length * H);
        ids.forEach((t, i) => {
          x.set(embed.subarray(t * H, (t + 1) * H), i * H);
        });
        layers.forEach((w, l) => {
          const cache = { ...ref[l]!, capacity: CAP, length, padLeft };
          k.layer(x, w, { ...dims, tokens: s }, 1e-6, cos, sin, cache, dtype);
        });
        const last = new Float32Array(B * H);
        for (let b = 0; b < B; b++)
          last.set(x.subarray(((b + 1) * s - 1) * H, (b + 1) * s * H), b * H);
        k.rmsNorm(last, finalNorm, B, H, 1e-6, last);
        const want = new Float32Array(B * V);
        k.linear(last, head, dtype, B, H, V, want);
        return { logits, want };
      };
      const pre = run(tokens, positions, S, 0);
      expect(maxRelDiff(pre.logits, pre.want)).toBeLessThan(1e-5);
      const step = run([7, 40], [5, 3], 1, S);
      expect(maxRelDiff(step.logits, step.want)).toBeLessThan(1e-5);
      for (let l = 0; l < L; l++) {
        expect(maxRelDiff(mine[l]!.k, ref[l]!.k)).toBeLessThan(1e-5);
        expect(maxRelDiff(mine[l]!.v, ref[l]!.v)).toBeLessThan(1e-5);
      }
      // logits move with the weights: the test can fail
      expect(Math.max(...step.logits.map(Math.abs))).toBeGreaterThan(1e-3);
    },
  );

  it.each(['float32', 'bfloat16'] as const)(
    '%s: 1 and 2 threads give the same decode-step layer (q/k/v, then gate/up, one job over the threads)',
    async (dtype) => {
      // wide enough that each group of products is split over 2 threads
      const w = { rows: 3, hidden: 256, heads: 4, kvHeads: 2, headDim: 64, intermediate: 512 };
      const m = (n: number, seed: number) =>
        dtype === 'float32' ? values(n, seed, 0.1) : bf16(values(n, seed, 0.1));
      const [qw, kw, h, f] = [w.heads * w.headDim, w.kvHeads * w.headDim, w.hidden, w.intermediate];
      const weights: DecodeLayerWeights = {
        inputNorm: new Float32Array(h).fill(1),
        q: m(qw * h, 1),
        k: m(kw * h, 2),
        v: m(kw * h, 3),
        o: m(h * qw, 4),
        postNorm: new Float32Array(h).fill(1),
        gate: m(f * h, 5),
        up: m(f * h, 6),
        down: m(h * f, 7),
      };
      const cos = new Float32Array(w.rows * w.headDim).fill(1);
      const sin = new Float32Array(w.rows * w.headDim);
      const run = async (threads: number, seed = 8) => {
        await initEngine({ backend: 'native', threads, logger: () => {}, env: {} });
        const x = values(w.rows * h, seed);
        const cache = {
          k: new Float32Array(w.rows * kw * 4),
          v: new Float32Array(w.rows * kw * 4),
          capacity: 4,
          length: 0,
          padLeft: new Int32Array(w.rows),
        };
        decodeKernels()!.layer(x, weights, w, 1e-6, cos, sin, cache, dtype);
        return { x, k: cache.k };
      };
      await run(1, 9); // other values in the layer's scratch first: a product left out shows
      const two = await run(2);
      const one = await run(1);
      expect([...two.x]).toEqual([...one.x]);
      expect([...two.k]).toEqual([...one.k]);
      expect(maxRelDiff(one.x, values(w.rows * h, 8))).toBeGreaterThan(1e-3); // the layer did something
    },
  );

  it('names the vocabulary range when a token id is outside it', () => {
    const k = decodeKernels()!;
    const layers = [layerWeights(0, 'float32')];
    const model = prepareDecodeModel({
      embed: values(V * H, 1),
      layers,
      finalNorm: new Float32Array(H).fill(1),
      head: values(V * H, 2),
    });
    const { cos, sin } = rope([0, 0]);
    const c = caches();
    const call = () =>
      k.forward(
        model,
        Int32Array.of(1, V),
        { ...dims, tokens: 1, vocab: V },
        1e-6,
        cos,
        sin,
        { k: [c[0]!.k], v: [c[0]!.v], capacity: CAP, length: 0, padLeft: Int32Array.of(0, 0) },
        new Float32Array(B * V),
      );
    expect(call).toThrow(/decodeStep: a token id is outside \[0, V\)/);
  });
});

// `forwardPaged` (decodeStep over a cache in blocks, native/paged-attention.c) against `forward`
// over the contiguous cache: block ids scattered over several segments, a left-padded prefill
// then decode steps, the same logits within 1e-5.
describe.skipIf(!hasNative)('decode forward over a paged cache', () => {
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
  });

  const BS = 2;
  const SEG = 2;
  const segments = () =>
    Array.from({ length: L }, () =>
      Array.from({ length: 4 }, () => new Float32Array(SEG * nKv * BS * d)),
    );
  // row 0: 5 prompt tokens + 3 new in 4 blocks; row 1: 3 + 3 in 3 blocks, ids over all 4 segments
  const table = Int32Array.of(5, 0, 7, 2, 6, 3, 1, -1);

  it.each(['float32', 'bfloat16'] as const)(
    '%s: a prefill and steps equal the contiguous cache within 1e-5',
    (dtype) => {
      const k = decodeKernels()!;
      const head = values(V * H, 22, 0.3);
      const layers = Array.from({ length: L }, (_, l) => layerWeights(l, dtype));
      const model = prepareDecodeModel(
        {
          embed: values(V * H, 20),
          layers,
          finalNorm: values(H, 21, 0.2).map((v) => 1 + v),
          head: dtype === 'float32' ? head : bf16(head),
        },
        dtype,
      );
      const contiguous = caches();
      const pk = segments();
      const pv = segments();
      const run = (
        ids: number[],
        pos: number[],
        s: number,
        length: number,
        pad: Int32Array,
        lens: Int32Array,
      ) => {
        const { cos, sin } = rope(pos);
        const want = new Float32Array(B * V);
        const got = new Float32Array(B * V);
        const size = { ...dims, tokens: s, vocab: V };
        const c = {
          k: contiguous.map((x) => x.k),
          v: contiguous.map((x) => x.v),
          capacity: CAP,
          length,
          padLeft: Int32Array.of(0, 2),
        };
        k.forward(model, Int32Array.from(ids), size, 1e-6, cos, sin, c, want);
        const p = {
          k: pk,
          v: pv,
          blockSize: BS,
          segmentBlocks: SEG,
          table,
          tableWidth: 4,
          lens,
          padLeft: pad,
        };
        k.forwardPaged(model, Int32Array.from(ids), size, 1e-6, cos, sin, p, got);
        return { got, want };
      };
      const pre = run(
        [3, 14, 15, 9, 2, 0, 0, 65, 35, 8],
        [0, 1, 2, 3, 4, 0, 0, 0, 1, 2],
        5,
        0,
        Int32Array.of(0, 2),
        Int32Array.of(0, 0),
      );
      expect(maxRelDiff(pre.got, pre.want)).toBeLessThan(1e-5);
      const next = [
        [7, 40],
        [11, 2],
        [60, 33],
      ];
      next.forEach((ids, i) => {
        const step = run(
          ids,
          [5 + i, 3 + i],
          1,
          5 + i,
          Int32Array.of(0, 0),
          Int32Array.of(5 + i, 3 + i),
        );
        expect(maxRelDiff(step.got, step.want), `step ${i}`).toBeLessThan(1e-5);
        expect(Math.max(...step.got.map(Math.abs))).toBeGreaterThan(1e-3);
      });
      // row 0's 4th token (block 0's second slot, segment 0) holds layer 0's keys of position 3
      expect(Math.max(...pk[0]![0]!.subarray(d, 2 * d).map(Math.abs))).toBeGreaterThan(0);
    },
  );

  it('names the pool when a block id is outside it', () => {
    const k = decodeKernels()!;
    const model = prepareDecodeModel({
      embed: values(V * H, 1),
      layers: [layerWeights(0, 'float32')],
      finalNorm: new Float32Array(H).fill(1),
      head: values(V * H, 2),
    });
    const { cos, sin } = rope([0, 0]);
    const p = segments();
    const call = () =>
      k.forwardPaged(
        model,
        Int32Array.of(1, 2),
        { ...dims, tokens: 1, vocab: V },
        1e-6,
        cos,
        sin,
        {
          k: [p[0]!],
          v: [p[1]!],
          blockSize: BS,
          segmentBlocks: SEG,
          table: Int32Array.of(0, 8),
          tableWidth: 1,
          lens: Int32Array.of(0, 0),
          padLeft: Int32Array.of(0, 0),
        },
        new Float32Array(B * V),
      );
    expect(call).toThrow(/decodeStep: a block id of a row's tokens is outside the pool's segments/);
  });
});
