// Decoding without tfjs: a decoder layer's decode step (or prefill) is one call into the addon,
// working on plain Float32Arrays (the parameters' own storage on the `native` backend) and on a
// KV cache laid out for appends. Dispatches are counted (see dispatch-counter.ts).
import { countDispatches } from '../dispatch-counter.js';
import type { NativeAddon } from '../native-addon.js';
import { activeNativeAddon } from '../native-backend.js';

/**
 * Element type of the decode products' weight matrices: float32, or 16-bit weights kept as
 * their bits in Uint16Arrays (widened in the kernel, float32 accumulation).
 */
export type WeightDtype = 'float32' | 'bfloat16' | 'float16';

/** The weight dtypes, in the order of the addon's codes (RL2_WT_* in native/kernels.h). */
export const WEIGHT_DTYPES: readonly WeightDtype[] = ['float32', 'bfloat16', 'float16'];

/** A weight matrix [out, in]: float32 values, or bfloat16 / float16 bits. */
export type DecodeMatrix = Float32Array | Uint16Array;

/**
 * One layer's weights, HF layout (W [out, in]); optional ones absent where the model has none.
 * The seven matrices are Float32Arrays, or Uint16Arrays when the layer runs with 16-bit weights;
 * norms and biases are always Float32Arrays.
 */
export interface DecodeLayerWeights {
  inputNorm: Float32Array;
  q: DecodeMatrix;
  k: DecodeMatrix;
  v: DecodeMatrix;
  qBias?: Float32Array;
  kBias?: Float32Array;
  vBias?: Float32Array;
  /** Per-head RMSNorm of q and k (Qwen3), [d]. */
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  o: DecodeMatrix;
  oBias?: Float32Array;
  postNorm: Float32Array;
  gate: DecodeMatrix;
  up: DecodeMatrix;
  down: DecodeMatrix;
  gateBias?: Float32Array;
  upBias?: Float32Array;
  downBias?: Float32Array;
}

/** Slot order of the weights array `NativeAddon.decodeLayer` reads (enum in native/fused-decode.c). */
export const DECODE_WEIGHT_SLOTS: readonly (keyof DecodeLayerWeights)[] = [
  'inputNorm',
  'q',
  'k',
  'v',
  'qBias',
  'kBias',
  'vBias',
  'qNorm',
  'kNorm',
  'o',
  'oBias',
  'postNorm',
  'gate',
  'up',
  'down',
  'gateBias',
  'upBias',
  'downBias',
];

/** Sizes of one decode step: B rows, hidden H, heads nH / nKv of d, MLP width F. */
export interface DecodeDims {
  rows: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  /** New tokens per row, S (default 1, a decode step; a prefill passes the padded prompt length). */
  tokens?: number;
}

/** A whole model's weights for `DecodeKernels.forward`, HF layout. */
export interface DecodeModelWeights {
  /** Token embedding [V, H], float32. */
  embed: Float32Array;
  layers: DecodeLayerWeights[];
  /** The final RMSNorm weight [H]. */
  finalNorm: Float32Array;
  /** The LM head [V, H] (the embedding when tied), of the forward's weight dtype. */
  head: DecodeMatrix;
}

/**
 * `DecodeModelWeights` in the addon's layout (`prepareDecodeModel`): made once and passed to
 * every `forward` while the weights stay the same, so a step builds no per-layer arrays.
 */
export interface PreparedDecodeModel {
  readonly embed: Float32Array;
  readonly layers: (DecodeMatrix | null)[][];
  readonly finalNorm: Float32Array;
  readonly head: DecodeMatrix;
  readonly weightDtype: WeightDtype;
}

/** `weights` (matrices of `weightDtype`) in the layout `DecodeKernels.forward` reads. */
export function prepareDecodeModel(
  weights: DecodeModelWeights,
  weightDtype: WeightDtype = 'float32',
): PreparedDecodeModel {
  return {
    embed: weights.embed,
    layers: weights.layers.map((w) => DECODE_WEIGHT_SLOTS.map((name) => w[name] ?? null)),
    finalNorm: weights.finalNorm,
    head: weights.head,
    weightDtype,
  };
}

/** Per-layer KV caches of a forward (each [B, nKv, capacity, d], as `DecodeKernels.layer`'s). */
export interface DecodeCaches {
  k: Float32Array[];
  v: Float32Array[];
  capacity: number;
  length: number;
  padLeft: Int32Array;
}

/**
 * Per-layer KV caches of a forward in fixed-size blocks (native/paged-kv.h): `k[l]` / `v[l]` the
 * layer's pool segments, each `segmentBlocks` blocks of [nKv, blockSize, d]; row b's token j in
 * block table[b * tableWidth + floor(j / blockSize)] (ids count blocks over the segments) at
 * offset j % blockSize. Row b holds `lens[b]` tokens; of its S new tokens the first `padLeft[b]`
 * are padding (neither written nor attended), the rest are written from token lens[b] on.
 */
export interface PagedDecodeCaches {
  k: Float32Array[][];
  v: Float32Array[][];
  blockSize: number;
  segmentBlocks: number;
  table: Int32Array;
  tableWidth: number;
  lens: Int32Array;
  padLeft: Int32Array;
}

/** The decode kernels of the active backend; each call is one dispatch. */
export interface DecodeKernels {
  /**
   * One layer over S = `dims.tokens` new tokens per row, in place on `x` [B, S, H]: writes their
   * keys/values (after RoPE) at columns length .. length+S-1 of `kCache`/`vCache`
   * [B, nKv, capacity, d]; token s of row b attends to columns padLeft[b] .. length+s (causal;
   * a token before padLeft[b], left padding of a prefill, gets zeros). `cos`/`sin` [B, S, d]
   * for each token's position. S = 1 is a decode step, S > 1 a prefill (tiled attention).
   * `weightDtype` (default float32) says what the matrices of `weights` hold.
   */
  layer(
    x: Float32Array,
    weights: DecodeLayerWeights,
    dims: DecodeDims,
    eps: number,
    cos: Float32Array,
    sin: Float32Array,
    cache: {
      k: Float32Array;
      v: Float32Array;
      capacity: number;
      length: number;
      padLeft: Int32Array;
    },
    weightDtype?: WeightDtype,
  ): void;
  /**
   * The whole model over S = `dims.tokens` new tokens per row as one call: `tokens` [B, S]
   * embedded, every layer as `layer` (writing each layer's cache from column `caches.length`),
   * and `logits` [B, V] of each row's last token (final norm, head). V = `dims.vocab`. A
   * decode step (B * S <= 64) allocates nothing in the addon.
   */
  forward(
    model: PreparedDecodeModel,
    tokens: Int32Array,
    dims: DecodeDims & { vocab: number },
    eps: number,
    cos: Float32Array,
    sin: Float32Array,
    caches: DecodeCaches,
    logits: Float32Array,
  ): void;
  /** `forward` over a cache in blocks (the caller owns the blocks each row's new tokens land in). */
  forwardPaged(
    model: PreparedDecodeModel,
    tokens: Int32Array,
    dims: DecodeDims & { vocab: number },
    eps: number,
    cos: Float32Array,
    sin: Float32Array,
    caches: PagedDecodeCaches,
    logits: Float32Array,
  ): void;
  /**
   * The tiles the decode products run on this CPU: 'avx512-bf16-dot' where bfloat16 weights
   * meet x rounded to bfloat16 (AVX512_BF16 dot products, as llama.cpp's BF16), else 'avx512',
   * 'avx2' or 'c' (x as float32).
   */
  products(): 'avx512-bf16-dot' | 'avx512' | 'avx2' | 'c';
  /**
   * y [rows, outFeatures] = x [rows, inFeatures] w^T, w [outFeatures, inFeatures] of
   * `weightDtype`: every thread streams its share of w once for all rows (an LM head).
   */
  linear(
    x: Float32Array,
    w: DecodeMatrix,
    weightDtype: WeightDtype,
    rows: number,
    inFeatures: number,
    outFeatures: number,
    y: Float32Array,
  ): void;
  /**
   * y[i] = the `weightDtype` bits of x[i] (rounded to nearest even) on every thread: a 16-bit
   * copy of a float32 weight. y is at least as long as x.
   */
  halfBits(x: Float32Array, weightDtype: 'bfloat16' | 'float16', y: Uint16Array): void;
  /** y [rows, h] = rmsNorm(x) w: the addon's `rmsNorm`. */
  rmsNorm: NativeAddon['rmsNorm'];
  /** out [m, n] = a [m, k] b^T with b [n, k]. */
  matMulTransposed(
    a: Float32Array,
    b: Float32Array,
    m: number,
    n: number,
    k: number,
    out: Float32Array,
  ): void;
  /** One token per row of logits [rows, vocab]: the addon's `sampleRows`. */
  sampleRows: NativeAddon['sampleRows'];
}

/**
 * The dims every decode call starts with: rows, hidden, heads, kvHeads, headDim, intermediate,
 * the contiguous cache's capacity and length (0, 0 for a paged cache), tokens per row.
 */
function layerDims(dims: DecodeDims, capacity: number, length: number): number[] {
  const { rows, hidden, heads, kvHeads, headDim, intermediate } = dims;
  return [rows, hidden, heads, kvHeads, headDim, intermediate, capacity, length, dims.tokens ?? 1];
}

/** The addon's decodeStep dims: `layerDims`, vocab, layers, then a paged cache's block words. */
function stepDims(
  dims: DecodeDims & { vocab: number },
  model: PreparedDecodeModel,
  cache: readonly [capacity: number, length: number],
  paged: readonly number[] = [],
): Int32Array {
  const first = layerDims(dims, ...cache);
  return Int32Array.of(...first, dims.vocab, model.layers.length, ...paged);
}

/** One whole-model call into the addon (a paged cache passes its block table and row lengths). */
function decodeStep(
  addon: NativeAddon,
  model: PreparedDecodeModel,
  tokens: Int32Array,
  d: Int32Array,
  eps: number,
  cos: Float32Array,
  sin: Float32Array,
  caches: Pick<DecodeCaches | PagedDecodeCaches, 'k' | 'v' | 'padLeft'>,
  logits: Float32Array,
  ...paged: [] | [table: Int32Array, lens: Int32Array]
): void {
  countDispatches();
  const { embed, layers, finalNorm, head } = model;
  const dtype = WEIGHT_DTYPES.indexOf(model.weightDtype);
  const { k, v, padLeft } = caches;
  addon.decodeStep(
    tokens,
    embed,
    layers,
    finalNorm,
    head,
    d,
    eps,
    cos,
    sin,
    k,
    v,
    padLeft,
    logits,
    dtype,
    ...paged,
  );
}

/** The decode kernels when the active backend is `native` with the addon loaded, else undefined. */
export function decodeKernels(): DecodeKernels | undefined {
  const addon = activeNativeAddon();
  if (!addon) return undefined;
  return {
    layer(x, weights, dims, eps, cos, sin, cache, weightDtype = 'float32') {
      const slots = DECODE_WEIGHT_SLOTS.map((name) => weights[name] ?? null);
      const d = Int32Array.from(layerDims(dims, cache.capacity, cache.length));
      countDispatches();
      const code = WEIGHT_DTYPES.indexOf(weightDtype);
      addon.decodeLayer(x, slots, d, eps, cos, sin, cache.k, cache.v, cache.padLeft, code);
    },
    forward(model, tokens, dims, eps, cos, sin, caches, logits) {
      const d = stepDims(dims, model, [caches.capacity, caches.length]);
      decodeStep(addon, model, tokens, d, eps, cos, sin, caches, logits);
    },
    forwardPaged(model, tokens, dims, eps, cos, sin, caches, logits) {
      const paged = [caches.blockSize, caches.tableWidth, caches.segmentBlocks];
      const d = stepDims(dims, model, [0, 0], paged);
      decodeStep(addon, model, tokens, d, eps, cos, sin, caches, logits, caches.table, caches.lens);
    },
    products: () => addon.decodeProducts(),
    linear(x, w, weightDtype, rows, inFeatures, outFeatures, y) {
      countDispatches();
      addon.linear(x, w, WEIGHT_DTYPES.indexOf(weightDtype), rows, inFeatures, outFeatures, y);
    },
    halfBits(x, weightDtype, y) {
      countDispatches();
      addon.halfBits(x, WEIGHT_DTYPES.indexOf(weightDtype), y);
    },
    rmsNorm(...args) {
      countDispatches();
      addon.rmsNorm(...args);
    },
    matMulTransposed(a, b, m, n, k, out) {
      countDispatches();
      addon.gemm(false, true, 1, m, n, k, a, 0, b, 0, out);
    },
    sampleRows(...args) {
      countDispatches();
      addon.sampleRows(...args);
    },
  };
}
