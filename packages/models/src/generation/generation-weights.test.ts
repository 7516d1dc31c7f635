import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { adamWInPlace, decodeKernels, initEngine } from '@rl2/engine';
import { nativeForTests } from '@rl2/engine/testing';
import { loadModel } from '../checkpoint/load-checkpoint.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { fusedDecoder } from './fused-decoder.js';
import { createGenerator } from './generator.js';
import {
  decodeMatrix,
  defaultWeightDtype,
  halfCopiesMade,
  parseWeightDtype,
  toHalfBits,
} from './generation-weights.js';

// Generation with bfloat16 weights against a float64 forward written out here (RMSNorm, q/k
// norm, rotate-half RoPE, grouped-query attention, SwiGLU, LM head) over the same weights
// rounded to bfloat16 (and, where the CPU has AVX512_BF16's dot products, each product's input
// too); and the float32 fused decoder's greedy tokens against the tfjs path's.
const FIX = join(import.meta.dirname, '..', '..', 'fixtures');
const hasNative = nativeForTests().ok;

/** The bfloat16 value nearest each float32 (round to nearest even), as float64s. */
function bf16Values(x: Float32Array): Float64Array {
  const bits = toHalfBits(x, 'bfloat16');
  return Float64Array.from(bits, (b) => new Float32Array(Uint32Array.of(b << 16).buffer)[0]!);
}

function rms(x: Float64Array, w: ArrayLike<number>, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * inv * w[i]!);
}

/** y = W x with W [out, in] row-major. */
function product(w: Float64Array, x: Float64Array): Float64Array {
  const out = new Float64Array(w.length / x.length);
  for (let j = 0; j < out.length; j++) {
    let s = 0;
    for (let k = 0; k < x.length; k++) s += w[j * x.length + k]! * x[k]!;
    out[j] = s;
  }
  return out;
}

/** Rotate-half RoPE of one head `x` at position `pos`. */
function rope(x: Float64Array, pos: number, invFreq: Float64Array): Float64Array {
  const half = x.length / 2;
  const out = new Float64Array(x.length);
  for (let i = 0; i < half; i++) {
    const c = Math.cos(pos * invFreq[i]!);
    const s = Math.sin(pos * invFreq[i]!);
    out[i] = x[i]! * c - x[i + half]! * s;
    out[i + half] = x[i + half]! * c + x[i]! * s;
  }
  return out;
}

/** Whether the decode products round x to bfloat16 for bfloat16 weights on this CPU. */
const roundsX = () => decodeKernels()?.products() === 'avx512-bf16-dot';

/** Last-token logits of `tokens` (positions 0..n-1), float64, every matrix bf16-rounded (and
 *  each product's input, with `roundX`). */
function referenceLogits(model: DecoderModel, tokens: number[], roundX = roundsX()): Float64Array {
  const matVec = (w: Float64Array, x: Float64Array) =>
    product(w, roundX ? bf16Values(Float32Array.from(x)) : x);
  const c = model.config;
  const p = (name: string) => model.params.get(name)!.dataSync() as Float32Array;
  const bf = (name: string) => bf16Values(p(name));
  const d = c.headDim;
  const rep = c.numHeads / c.numKvHeads;
  const h = c.hiddenSize;
  const embed = p('model.embed_tokens.weight');
  const xs = tokens.map((t) => Float64Array.from(embed.subarray(t * h, (t + 1) * h)));
  const keys: Float64Array[][] = [];
  const vals: Float64Array[][] = [];
  for (let l = 0; l < c.numLayers; l++) {
    const pre = `model.layers.${l}.`;
    const [wq, wk, wv, wo] = ['q', 'k', 'v', 'o'].map((n) =>
      bf(`${pre}self_attn.${n}_proj.weight`),
    );
    const [wg, wu, wd] = ['gate', 'up', 'down'].map((n) => bf(`${pre}mlp.${n}_proj.weight`));
    const head = (v: Float64Array, i: number, norm: string) =>
      rms(v.subarray(i * d, (i + 1) * d), p(`${pre}self_attn.${norm}.weight`), c.rmsNormEps);
    keys.length = 0;
    vals.length = 0;
    const qs: Float64Array[][] = [];
    xs.forEach((x, t) => {
      const hx = rms(x, p(`${pre}input_layernorm.weight`), c.rmsNormEps);
      const q = matVec(wq!, hx);
      const k = matVec(wk!, hx);
      const v = matVec(wv!, hx);
      qs.push(
        Array.from({ length: c.numHeads }, (_, i) => rope(head(q, i, 'q_norm'), t, model.invFreq)),
      );
      keys.push(
        Array.from({ length: c.numKvHeads }, (_, i) =>
          rope(head(k, i, 'k_norm'), t, model.invFreq),
        ),
      );
      vals.push(Array.from({ length: c.numKvHeads }, (_, i) => v.slice(i * d, (i + 1) * d)));
    });
    xs.forEach((x, t) => {
      const attn = new Float64Array(c.numHeads * d);
      for (let i = 0; i < c.numHeads; i++) {
        const g = Math.floor(i / rep);
        const scores = Array.from({ length: t + 1 }, (_, j) => {
          let s = 0;
          for (let e = 0; e < d; e++) s += qs[t]![i]![e]! * keys[j]![g]![e]!;
          return s / Math.sqrt(d);
        });
        const m = Math.max(...scores);
        const ws = scores.map((s) => Math.exp(s - m));
        const z = ws.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++)
          for (let e = 0; e < d; e++) attn[i * d + e]! += (ws[j]! / z) * vals[j]![g]![e]!;
      }
      const o = matVec(wo!, attn);
      for (let e = 0; e < h; e++) x[e]! += o[e]!;
      const hx = rms(x, p(`${pre}post_attention_layernorm.weight`), c.rmsNormEps);
      const gate = matVec(wg!, hx);
      const up = matVec(wu!, hx);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = matVec(wd!, act);
      for (let e = 0; e < h; e++) x[e]! += down[e]!;
    });
  }
  const last = rms(xs[xs.length - 1]!, p('model.norm.weight'), c.rmsNormEps);
  return matVec(bf('lm_head.weight'), last);
}

function maxDiff(a: Float32Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('generation weight dtypes', () => {
  it('names the key and the allowed values for an unknown dtype', () => {
    expect(parseWeightDtype('bfloat16', 'rollout.weight_dtype')).toBe('bfloat16');
    expect(() => parseWeightDtype('bf8', 'rollout.weight_dtype')).toThrow(
      'rollout.weight_dtype "bf8" is not a generation weight dtype; use one of float32, bfloat16, float16',
    );
  });
});

describe.skipIf(!hasNative)('generation with 16-bit weights', () => {
  let model: DecoderModel;
  beforeAll(async () => {
    await initEngine({ backend: 'native', threads: 2, logger: () => {}, env: {} });
    model = (await loadModel(join(FIX, 'qwen3'))).model;
  });

  it('defaults to bfloat16 for a bfloat16 checkpoint, else float32', () => {
    expect(defaultWeightDtype(model)).toBe('float32');
    const bf = {
      ...model,
      config: { ...model.config, raw: { ...model.config.raw, torch_dtype: 'bfloat16' } },
    };
    expect(defaultWeightDtype(bf)).toBe('bfloat16');
  });

  it('bfloat16 prefill and decode steps match a float64 forward over the rounded weights', async () => {
    const fused = fusedDecoder(model, { weightDtype: 'bfloat16' })!;
    const tokens = [1, 17, 99, 5, 64, 3];
    const pf = await fused.prefill([tokens.slice(0, 3)], [[0, 1, 2]], [0]);
    const scale = Math.max(...referenceLogits(model, tokens.slice(0, 3)).map(Math.abs));
    expect(maxDiff(pf.logits, referenceLogits(model, tokens.slice(0, 3))) / scale).toBeLessThan(
      1e-5,
    );
    let kv = pf.kv;
    for (let t = 3; t < tokens.length; t++) {
      const s = await fused.step(kv, [tokens[t]!], [t]);
      expect(
        maxDiff(s.logits, referenceLogits(model, tokens.slice(0, t + 1))) / scale,
        `token ${t}`,
      ).toBeLessThan(1e-5);
      kv = s.kv;
    }
    // and the rounding is real: float32 weights give other logits
    const f32 = await fusedDecoder(model)!.prefill([tokens.slice(0, 3)], [[0, 1, 2]], [0]);
    expect(maxDiff(f32.logits, referenceLogits(model, tokens.slice(0, 3))) / scale).toBeGreaterThan(
      1e-4,
    );
  });

  // Over 64 tokens: the dot tiles with x rounded to bfloat16 (the lane tiles from 32 rows). The
  // reference rounds its own float64 x, and among the ~50k inputs rounded here a few land within
  // float32 noise of a bfloat16 rounding boundary, so the two round them apart: each such input
  // moves the last logits by ~1e-3 at this width (1.3e-3 and 1.7e-3 seen, the count depending on
  // the kernels' summation order). A wrong product (a row, column or weight off) moves them by
  // O(1), so the bound is 1e-2, and the steps above (a few hundred inputs) keep 1e-5.
  it('a bfloat16 prefill over 80 tokens (more than a decode step) matches the float64 forward', async () => {
    const tokens = Array.from({ length: 80 }, (_, t) => (t * 37 + 5) % model.config.vocabSize);
    const pf = await fusedDecoder(model, { weightDtype: 'bfloat16' })!.prefill(
      [tokens],
      [tokens.map((_, t) => t)],
      [0],
    );
    const want = referenceLogits(model, tokens);
    const scale = Math.max(...want.map(Math.abs));
    expect(maxDiff(pf.logits, want) / scale).toBeLessThan(1e-2);
  });

  it('a weight assigned new values gets a new 16-bit copy', () => {
    const v = tf.variable(tf.tensor1d([1, 2, 3]));
    const before = decodeMatrix(v, 'bfloat16') as Uint16Array;
    expect(decodeMatrix(v, 'bfloat16')).toBe(before);
    v.assign(tf.tensor1d([1, 2, 5]));
    expect([...(decodeMatrix(v, 'bfloat16') as Uint16Array)]).toEqual([0x3f80, 0x4000, 0x40a0]);
    expect([...(decodeMatrix(v, 'float16') as Uint16Array)]).toEqual([0x3c00, 0x4000, 0x4500]);
    v.dispose();
  });

  it('the native 16-bit copies are the bits toHalfBits gives, over every exponent', () => {
    // float32 bit patterns from an LCG: every exponent (subnormals, infinities, NaNs) and sign
    let s = 12345;
    const bits = Uint32Array.from({ length: 100_003 }, () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s;
    });
    const x = new Float32Array(bits.buffer);
    for (const dtype of ['bfloat16', 'float16'] as const) {
      const y = new Uint16Array(x.length);
      decodeKernels()!.halfBits(x, dtype, y);
      const want = toHalfBits(x, dtype);
      let bad = -1;
      for (let i = 0; i < x.length && bad < 0; i++) if (y[i] !== want[i]) bad = i;
      expect(bad, `${dtype}: first differing element`).toBe(-1);
    }
  });

  it('bfloat16 generation makes each 16-bit copy once per weight version, natively, and sees an in-place AdamW step', async () => {
    // a model of its own: the AdamW step below changes its weights
    const own = (await loadModel(join(FIX, 'qwen3'))).model;
    const matrices = 7 * own.config.numLayers + 1; // the layers' seven and the LM head
    const request = { inputIds: [1, 17, 99, 5], temperature: 0, maxNewTokens: 4, ignoreEos: true };
    const gen = createGenerator(own, { weightDtype: 'bfloat16' });
    const fused = fusedDecoder(own, { weightDtype: 'bfloat16' })!;
    const tokens = [1, 17, 99];
    const c0 = halfCopiesMade();
    await gen.generate(request);
    await fused.prefill([tokens], [[0, 1, 2]], [0]);
    const c1 = halfCopiesMade();
    expect([c1.native - c0.native, c1.js - c0.js]).toEqual([matrices, 0]);
    await gen.generate(request);
    await createGenerator(own, { weightDtype: 'bfloat16' }).generate(request);
    expect(halfCopiesMade().native).toBe(c1.native); // other requests, another generator: no copy
    // one optimizer step over one matrix, in place (its dataId stays)
    const name = 'model.layers.1.mlp.down_proj.weight';
    const p = own.params.get(name) as tf.Variable;
    const id = (p as unknown as { dataId: object }).dataId;
    // moments that alone hold their buffers, as the optimizer's (else AdamW assigns new data)
    const [m, v] = [0, 1].map(() => tf.tidy(() => tf.variable(tf.zerosLike(p), false))) as [
      tf.Variable,
      tf.Variable,
    ];
    const g = tf.randomNormal(p.shape, 0, 1, 'float32', 3);
    const h = { lr: 0.05, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0, step: 1 };
    adamWInPlace(p, g, m, v, h);
    expect((own.params.get(name) as unknown as { dataId: object }).dataId).toBe(id);
    const pf = await fused.prefill([tokens], [[0, 1, 2]], [0]);
    expect(halfCopiesMade().native - c1.native).toBe(1); // that matrix only
    const want = referenceLogits(own, tokens);
    const scale = Math.max(...want.map(Math.abs));
    expect(maxDiff(pf.logits, want) / scale).toBeLessThan(1e-5);
    tf.dispose([m, v, g]);
  });

  it('with bfloat16 weights, a request joining a running batch gets the tokens it gets alone', async () => {
    const alone = async (inputIds: number[], maxNewTokens: number) =>
      (
        await createGenerator(model, { weightDtype: 'bfloat16' }).generate({
          inputIds,
          temperature: 0,
          maxNewTokens,
          ignoreEos: true,
        })
      ).outputIds;
    const gen = createGenerator(model, { maxBatch: 3, weightDtype: 'bfloat16' });
    const running = gen.generate({
      inputIds: [1, 17, 99, 5],
      temperature: 0,
      maxNewTokens: 12,
      ignoreEos: true,
    });
    let joined: Promise<{ outputIds: number[] }> | undefined;
    const first = gen.generate({
      inputIds: [1, 8],
      temperature: 0,
      maxNewTokens: 3,
      ignoreEos: true,
      onToken: () => {
        // joins between steps of the running batch
        joined ??= gen.generate({
          inputIds: [1, 50, 51, 52, 53],
          temperature: 0,
          maxNewTokens: 6,
          ignoreEos: true,
        });
      },
    });
    const [a, b] = await Promise.all([running, first]);
    const c = await joined!;
    expect(a.outputIds).toEqual(await alone([1, 17, 99, 5], 12));
    expect(b.outputIds).toEqual(await alone([1, 8], 3));
    expect(c.outputIds).toEqual(await alone([1, 50, 51, 52, 53], 6));
  });

  it('float32 fused decoding gives the greedy tokens of the tfjs path', async () => {
    const request = { inputIds: [1, 17, 99, 5], temperature: 0, maxNewTokens: 24, ignoreEos: true };
    const fused = await createGenerator(model).generate(request);
    const plain = await createGenerator(model, { fusedDecode: false }).generate(request);
    expect(fused.outputIds.length).toBe(24);
    expect(fused.outputIds).toEqual(plain.outputIds);
  });
});
