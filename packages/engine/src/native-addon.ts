// Loads the optional N-API addon (native/*.c: prebuilt in @rl2/engine-<platform>, or built
// into build/ by scripts/engine-build-native.mjs; addon-places.ts says where). Never throws:
// a missing or broken addon is reported as a reason string so the engine can fall back to the
// pure kernels with one line of notice.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddonHost, addonPlaces } from './addon-places.js';

/** Binary op codes of `NativeAddon.binary` (enum in native/elementwise.c). */
export const BinaryOp = {
  add: 0,
  sub: 1,
  mul: 2,
  div: 3,
  max: 4,
  min: 5,
  squaredDiff: 6,
  pow: 7,
} as const;
/** Comparison op codes of `NativeAddon.compare` (enum in native/elementwise.c). */
export const CompareOp = {
  equal: 0,
  notEqual: 1,
  greater: 2,
  greaterEqual: 3,
  less: 4,
  lessEqual: 5,
} as const;
/** Unary op codes of `NativeAddon.unary` (enum in native/elementwise.c). */
export const UnaryOp = {
  exp: 0,
  log: 1,
  neg: 2,
  sqrt: 3,
  rsqrt: 4,
  sigmoid: 5,
  square: 6,
  relu: 7,
  tanh: 8,
  abs: 9,
  reciprocal: 10,
} as const;
/** Reduction op codes of `NativeAddon.reduce` (enum in native/reduce.c). */
export const ReduceOp = { sum: 0, max: 1, min: 2, mean: 3 } as const;

/** RL2_KERNELS_ABI (native/addon.c) of the addon this TypeScript expects. */
export const NATIVE_ABI = 19;

/** The functions exported by rl2_kernels.node; every output array is allocated by the caller. */
export interface NativeAddon {
  /** RL2_KERNELS_ABI the addon was built with. */
  abi: number;
  /** C[b] = op(A[b]) @ op(B[b]), row-major; C [batch, M, N]; strides 0 broadcast one matrix. */
  gemm(
    transA: boolean,
    transB: boolean,
    batch: number,
    m: number,
    n: number,
    k: number,
    a: Float32Array,
    strideA: number,
    b: Float32Array,
    strideB: number,
    c: Float32Array,
  ): void;
  setThreads(n: number): void;
  getThreads(): number;
  /** out = a op b over `outShape`, element strides per output dim (0 = broadcast). */
  binary(
    op: number,
    a: Float32Array,
    aStrides: Int32Array,
    b: Float32Array,
    bStrides: Int32Array,
    out: Float32Array,
    outShape: Int32Array,
  ): void;
  /** Like `binary`, writing 0/1 into a Uint8Array (tfjs bool). */
  compare(
    op: number,
    a: Float32Array,
    aStrides: Int32Array,
    b: Float32Array,
    bStrides: Int32Array,
    out: Uint8Array,
    outShape: Int32Array,
  ): void;
  unary(op: number, x: Float32Array, out: Float32Array): void;
  /** Softmax over the rows of x [rows, cols]. */
  softmax(x: Float32Array, rows: number, cols: number, out: Float32Array): void;
  /** x [outer, r, inner] reduced over r into out [outer, inner]. */
  reduce(
    op: number,
    x: Float32Array,
    outer: number,
    r: number,
    inner: number,
    out: Float32Array,
  ): void;
  transpose(
    x: Float32Array | Int32Array,
    shape: Int32Array,
    perm: Int32Array,
    out: Float32Array | Int32Array,
  ): void;
  /** out[outOffset + i·outStrides] = x[xOffset + i·xStrides] for every index i of `shape`. */
  stridedCopy(
    x: Float32Array | Int32Array,
    xOffset: number,
    xStrides: Int32Array,
    out: Float32Array | Int32Array,
    outOffset: number,
    outStrides: Int32Array,
    shape: Int32Array,
  ): void;
  /** x [outer, n, inner] -> out [outer, indices.length, inner]; returns -1 or the first bad index position. */
  gather(
    x: Float32Array,
    outer: number,
    n: number,
    inner: number,
    indices: Int32Array,
    out: Float32Array,
  ): number;
  /** out [numSegments, inner] += rows of x [ids.length, inner] by segment id (out starts zeroed). */
  /** losses[r] = logsumexp(logits[r]) - logits[r, labels[r]] (0 where label < 0); returns -1 or the first row with label >= cols. */
  xentForward(
    logits: Float32Array,
    rows: number,
    cols: number,
    labels: Int32Array,
    losses: Float32Array,
  ): number;
  /** dx[r] = dy[r] (softmax(logits[r]) - onehot(labels[r])), 0 where label < 0. */
  xentBackward(
    logits: Float32Array,
    rows: number,
    cols: number,
    labels: Int32Array,
    dy: Float32Array,
    dx: Float32Array,
  ): void;
  segmentSum(
    x: Float32Array,
    ids: Int32Array,
    numSegments: number,
    inner: number,
    out: Float32Array,
  ): void;
  /** y [rows, h] = w x / sqrt(mean(x^2) + eps) per row. */
  rmsNorm(
    x: Float32Array,
    w: Float32Array,
    rows: number,
    h: number,
    eps: number,
    y: Float32Array,
  ): void;
  /** dx [rows, h] and dw [h] of `rmsNorm` given dy. */
  rmsNormGrad(
    x: Float32Array,
    w: Float32Array,
    dy: Float32Array,
    rows: number,
    h: number,
    eps: number,
    dx: Float32Array,
    dw: Float32Array,
  ): void;
  /** y = silu(gate) * up, elementwise. */
  swiglu(gate: Float32Array, up: Float32Array, y: Float32Array): void;
  /** dgate, dup of `swiglu` given dy. */
  swigluGrad(
    gate: Float32Array,
    up: Float32Array,
    dy: Float32Array,
    dgate: Float32Array,
    dup: Float32Array,
  ): void;
  /** RoPE on x [n, heads, d] with cos/sin [n, d] (rotate-half layout); `backward` applies the transpose. */
  rotary(
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    n: number,
    heads: number,
    d: number,
    backward: boolean,
    out: Float32Array,
  ): void;
  /** Attention, dims [B, S, L, nH, nKv, d, maskB]: q/out [B, S, nH, d], k/v [B, nKv, L, d], mask [maskB, S, L]. */
  attention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    mask: Float32Array,
    dims: Int32Array,
    scale: number,
    out: Float32Array,
  ): void;
  /** dq, dk, dv of `attention` given dout (P recomputed). */
  attentionGrad(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    mask: Float32Array,
    dims: Int32Array,
    scale: number,
    dout: Float32Array,
    dq: Float32Array,
    dk: Float32Array,
    dv: Float32Array,
  ): void;
  /**
   * stats [rows, 2] = (z[y] - lse, entropy) and lse [rows] of logits z [rows, cols]; returns -1 or
   * the first row with a target outside [0, cols).
   */
  logpStats(
    z: Float32Array,
    rows: number,
    cols: number,
    targets: Int32Array,
    stats: Float32Array,
    lse: Float32Array,
  ): number;
  /** dz [rows, cols] of `logpStats` given dy [rows, 2], scaled by `inv` (1 / temperature). */
  logpStatsGrad(
    z: Float32Array,
    rows: number,
    cols: number,
    targets: Int32Array,
    lse: Float32Array,
    stats: Float32Array,
    dy: Float32Array,
    inv: number,
    dz: Float32Array,
  ): void;
  /**
   * One AdamW step into pOut, mOut, vOut; hp = [lr, beta1, beta2, eps, weightDecay, 1 - beta1^t, 1 - beta2^t,
   * gradScale] (the gradient is multiplied by gradScale, 1 when hp has 7 values).
   */
  adamw(
    p: Float32Array,
    g: Float32Array,
    m: Float32Array,
    v: Float32Array,
    hp: Float32Array,
    pOut: Float32Array,
    mOut: Float32Array,
    vOut: Float32Array,
  ): void;
  /** sum(x^2) in double precision, over the threads (a gradient's squared norm). */
  sumSquares(x: Float32Array): number;
  /**
   * One decoder layer over S new tokens per row in place on x [B, S, H] (see
   * native/fused-decode.c): weights in `DECODE_WEIGHT_SLOTS` order (null where absent; the
   * matrices Uint16Arrays when weightDtype is 1, bfloat16, or 2, float16), dims
   * [B, H, nH, nKv, d, F, cap, len, S], cos/sin [B, S, d], caches [B, nKv, cap, d] (columns
   * len .. len+S-1 written), padLeft [B].
   */
  decodeLayer(
    x: Float32Array,
    weights: (Float32Array | Uint16Array | null)[],
    dims: Int32Array,
    eps: number,
    cos: Float32Array,
    sin: Float32Array,
    kCache: Float32Array,
    vCache: Float32Array,
    padLeft: Int32Array,
    weightDtype?: number,
  ): void;
  /**
   * The whole model over S new tokens per row (native/fused-decode.c): tokens [B, S] embedded
   * from embed [V, H], every layer as `decodeLayer` (layers[l] its weights, kCaches[l] /
   * vCaches[l] its cache), then logits [B, V] of each row's last token through finalNorm and
   * head [V, H] (a matrix of weightDtype). dims [B, H, nH, nKv, d, F, cap, len, S, V, L].
   * With `table` and `lens` the cache is in blocks (native/paged-kv.h): kCaches[l] / vCaches[l]
   * arrays of pool segments, table [B, tw] block ids, lens [B] tokens held, dims
   * [.., blockSize, tw, segmentBlocks].
   */
  decodeStep(
    tokens: Int32Array,
    embed: Float32Array,
    layers: (Float32Array | Uint16Array | null)[][],
    finalNorm: Float32Array,
    head: Float32Array | Uint16Array,
    dims: Int32Array,
    eps: number,
    cos: Float32Array,
    sin: Float32Array,
    kCaches: Float32Array[] | Float32Array[][],
    vCaches: Float32Array[] | Float32Array[][],
    padLeft: Int32Array,
    logits: Float32Array,
    weightDtype?: number,
    table?: Int32Array,
    lens?: Int32Array,
  ): void;
  /**
   * The tiles the decode products run on this CPU (native/decode-linear.c): 'avx512-bf16-dot'
   * (bfloat16 weights by AVX512_BF16 dot products, x rounded to bfloat16), 'avx512', 'avx2' or
   * 'c'. RL2_DECODE_ISA=avx512, avx2 or c, set before the addon loads, picks a narrower set.
   */
  decodeProducts(): 'avx512-bf16-dot' | 'avx512' | 'avx2' | 'c';
  /**
   * y [rows, out] = x [rows, in] w^T with w [out, in] a Float32Array (weightDtype 0) or a
   * Uint16Array of bfloat16 (1) or float16 (2) bits (native/decode-linear.c): the decode-step
   * product on every thread, one pass over w, up to 64 rows; sgemm above (a 16-bit w over
   * panels, each widened in one thread's cache). bfloat16 w on 'avx512-bf16-dot' (see
   * decodeProducts) takes the dot-product tiles at every row count: lanes along k below 32 rows,
   * along the rows (16 at a time, no sum across lanes) from 32.
   */
  linear(
    x: Float32Array,
    w: Float32Array | Uint16Array,
    weightDtype: number,
    rows: number,
    inFeatures: number,
    outFeatures: number,
    y: Float32Array,
  ): void;
  /**
   * A product with a frozen 16-bit W [out, in] (Uint16Array of bfloat16 (1) or float16 (2) bits,
   * native/frozen-linear.c): transpose 0, y [rows, out] = x [rows, in] W^T; transpose 1,
   * y [rows, in] = x [rows, out] W (the input gradient). W is widened a tile at a time for sgemm.
   */
  frozenLinear(
    x: Float32Array,
    w: Uint16Array,
    weightDtype: number,
    rows: number,
    inFeatures: number,
    outFeatures: number,
    y: Float32Array,
    transpose: number,
  ): void;
  /**
   * y[i] = the bfloat16 (weightDtype 1) or float16 (2) bits of x[i], rounded to nearest even
   * (native/half-bits.c, on every thread); y at least as long as x.
   */
  halfBits(x: Float32Array, weightDtype: number, y: Uint16Array): void;
  /**
   * Causal attention within segments, tiled (native/fused-flash-attention.c): q/out [B, T, nH, d],
   * k/v [B, nKv, T, d], seg [B, T]; key j is seen by query i iff j <= i and seg[j] == seg[i].
   * dims [B, T, nH, nKv, d]; writes out and lse [B, nH, T] (log-sum-exp of each query's scores).
   * With dims [B, Tq, nH, nKv, d, Tk]: q/out [B, Tq, nH, d], k/v/seg over Tk keys, and query i
   * sits at key position qpos[b, i] (j <= qpos[i], seg[j] == seg[qpos[i]]); else qpos is unread.
   */
  flashAttention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    seg: Int32Array,
    dims: Int32Array,
    scale: number,
    out: Float32Array,
    lse: Float32Array,
    qpos: Int32Array,
  ): void;
  /** dq, dk, dv of `flashAttention` given its out, lse and dout (scores recomputed per tile). */
  flashAttentionGrad(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    seg: Int32Array,
    dims: Int32Array,
    scale: number,
    out: Float32Array,
    lse: Float32Array,
    dout: Float32Array,
    dq: Float32Array,
    dk: Float32Array,
    dv: Float32Array,
    qpos: Int32Array,
  ): void;
  /**
   * Next tokens of `rows` rows of logits [rows, vocab] (native/sample-rows.c): row b draws by
   * the inverse CDF of softmax(logits / temperature[b]) at u[b] in [0, 1), greedy when the
   * temperature is 0 (the first argmax), skipped when NaN; writes tokens[b] and logprobs[b], its
   * log-probability under the temperature-scaled distribution (temperature 1 when greedy).
   */
  sampleRows(
    logits: Float32Array,
    rows: number,
    vocab: number,
    temperature: Float64Array,
    u: Float64Array,
    tokens: Int32Array,
    logprobs: Float64Array,
  ): void;
  /**
   * From now on glibc malloc serves large allocations from its heap and never gives freed heap
   * back to the kernel (native/memory.c), so a freed tensor's pages are reused instead of faulted
   * in again. The heap first grows by `reserveBytes` (untouched: no RSS) marked for transparent
   * huge pages, so the first touch of that much costs one fault per 2 MiB. False where the C
   * library is not glibc (nothing changed).
   */
  retainFreedMemory(reserveBytes: number): boolean;
}

/**
 * `from` names the place it loaded from (`addonPlaces`' label, e.g. `@rl2/engine-linux-x64-gnu`).
 * `path` on a failure: an addon file was there but did not load (stale, broken, wrong platform).
 */
export type NativeLoad =
  | { ok: true; addon: NativeAddon; path: string; from: string }
  | { ok: false; reason: string; path?: string };

/**
 * Finds and loads rl2_kernels.node from the first place of `addonPlaces` that has a loadable
 * one: `RL2_NATIVE_ADDON` if set (alone), else the prebuilt package for this platform, else
 * build/ of this package. `RL2_NO_NATIVE=1` forces the pure path. When none loads, the reason
 * is the first file that failed to load, else every place that was empty, in one line.
 */
export function loadNativeAddon(
  env: NodeJS.ProcessEnv = process.env,
  host?: AddonHost,
): NativeLoad {
  if (env.RL2_NO_NATIVE === '1') return { ok: false, reason: 'RL2_NO_NATIVE=1 is set' };
  const missing: string[] = [];
  let failed: NativeLoad | undefined;
  for (const place of addonPlaces(env, host)) {
    if (place.path === undefined || !existsSync(place.path)) {
      missing.push(place.missing);
      continue;
    }
    const load = loadAddonFile(place.path, place.label);
    if (load.ok) return load;
    failed ??= load;
  }
  return failed ?? { ok: false, reason: missing.join('; ') };
}

/**
 * OPENBLAS_THREAD_TIMEOUT the addon loads with unless the environment sets one: OpenBLAS's worker
 * threads wait for the next product by spinning 2^N cycles before they sleep (N = 28 by default,
 * ~0.1 s), so between the sgemm calls of a training step, while the other kernels run on the
 * main thread, every worker burns a core: at 2 threads a fifth of a step's CPU time. With 4 they
 * sleep at once and are woken by the next product (microseconds, once per sgemm call).
 */
export const OPENBLAS_THREAD_TIMEOUT = '4';

function loadAddonFile(path: string, from: string): NativeLoad {
  // OpenBLAS reads its environment once, when the addon is loaded (a library constructor); the
  // variable is removed again so child processes (PyTorch in the benches) keep their defaults
  const ownTimeout = process.env.OPENBLAS_THREAD_TIMEOUT === undefined;
  if (ownTimeout) process.env.OPENBLAS_THREAD_TIMEOUT = OPENBLAS_THREAD_TIMEOUT;
  try {
    const addon = createRequire(import.meta.url)(path) as NativeAddon;
    if (typeof addon.gemm !== 'function')
      return { ok: false, reason: `${path} is not the rl2 kernels addon`, path };
    if (addon.abi !== NATIVE_ABI) {
      return {
        ok: false,
        reason: `${path} is a stale build (abi ${addon.abi}, expected ${NATIVE_ABI}); rebuild with \`pnpm --filter @rl2/engine build\``,
        path,
      };
    }
    return { ok: true, addon, path, from };
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
    return { ok: false, reason: `${path} failed to load: ${message}`, path };
  } finally {
    if (ownTimeout) delete process.env.OPENBLAS_THREAD_TIMEOUT;
  }
}
