// Decoding without tfjs: a decoder layer's decode step (or prefill) is one call into the addon,
// working on plain Float32Arrays (the parameters' own storage on the `native` backend) and on a
// KV cache laid out for appends. Dispatches are counted (see dispatch-counter.ts).
import { countDispatches } from '../dispatch-counter.js';
import type { NativeAddon } from '../native-addon.js';
import { activeNativeAddon } from '../native-backend.js';

/** One layer's weights, HF layout (W [out, in]); optional ones absent where the model has none. */
export interface DecodeLayerWeights {
  inputNorm: Float32Array;
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  qBias?: Float32Array;
  kBias?: Float32Array;
  vBias?: Float32Array;
  /** Per-head RMSNorm of q and k (Qwen3), [d]. */
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  o: Float32Array;
  oBias?: Float32Array;
  postNorm: Float32Array;
  gate: Float32Array;
  up: Float32Array;
  down: Float32Array;
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

/** The decode kernels of the active backend; each call is one dispatch. */
export interface DecodeKernels {
  /**
   * One layer over S = `dims.tokens` new tokens per row, in place on `x` [B, S, H]: writes their
   * keys/values (after RoPE) at columns length .. length+S-1 of `kCache`/`vCache`
   * [B, nKv, capacity, d]; token s of row b attends to columns padLeft[b] .. length+s (causal;
   * a token before padLeft[b], left padding of a prefill, gets zeros). `cos`/`sin` [B, S, d]
   * for each token's position. S = 1 is a decode step, S > 1 a prefill (tiled attention).
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
  ): void;
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

/** The decode kernels when the active backend is `native` with the addon loaded, else undefined. */
export function decodeKernels(): DecodeKernels | undefined {
  const addon = activeNativeAddon();
  if (!addon) return undefined;
  return {
    layer(x, weights, dims, eps, cos, sin, cache) {
      const slots = DECODE_WEIGHT_SLOTS.map((name) => weights[name] ?? null);
      const d = Int32Array.of(
        dims.rows,
        dims.hidden,
        dims.heads,
        dims.kvHeads,
        dims.headDim,
        dims.intermediate,
        cache.capacity,
        cache.length,
        dims.tokens ?? 1,
      );
      countDispatches();
      addon.decodeLayer(x, slots, d, eps, cos, sin, cache.k, cache.v, cache.padLeft);
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
