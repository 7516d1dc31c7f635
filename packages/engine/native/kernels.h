/*
 * What the kernel families share: threading (parallel.c), row reductions (reduce.c), a
 * vectorisable exp, and the N-API entry points addon.c registers.
 *
 * Every kernel works on caller-owned TypedArrays (tensors stay plain JS memory, no 4 GiB wasm
 * heap) and writes into an output array the caller allocated. Matrix products go to OpenBLAS
 * cblas_sgemm (or Accelerate's on macOS); the rest are plain loops the compiler vectorises,
 * split over a persistent pool of pthreads when large (parallel.c: idle workers sleep, and no
 * kernel returns before its work is done, so the Node event loop is never held).
 */
#ifndef RL2_KERNELS_H
#define RL2_KERNELS_H

#include "napi-helpers.h"
#ifdef __APPLE__
/* macOS: Accelerate's cblas_sgemm (part of the OS; its threads are its own). Accelerate has no
   thread-count API, so the count the addon splits its loops over is a variable (matmul.c). */
#include <Accelerate/Accelerate.h>
extern int rl2_threads;
#define openblas_get_num_threads() (rl2_threads)
#define openblas_set_num_threads(n) ((void)(rl2_threads = (n)))
#else
#include <cblas.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Hot loops get an AVX2 clone picked at load time (ifunc); other CPUs run the SSE2 default. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif

/* Most threads one call splits its work over. */
#define MAX_GEMM_THREADS 64
/* Elements per thread below which starting a thread costs more than it saves. */
#define GRAIN (1 << 16)

/*
 * parallel_for: runs fn(ctx, begin, end) over [0, n) split across the configured thread count
 * (setThreads), when each piece gets at least `grain` units; every piece is done before it
 * returns. Elementwise work on large tensors is memory-bound, so 2-4 threads help most.
 * parallel_for_threads: over exactly min(threads, n) pieces (at least one unit each).
 */
typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);
/* Every function shared between files is named rl2_*: nothing can clash with a symbol of a
   statically linked OpenBLAS. */
#define parallel_for rl2_parallel_for
#define parallel_for_threads rl2_parallel_for_threads
void parallel_for(int64_t n, int64_t grain, range_fn fn, void *ctx);
void parallel_for_threads(int64_t n, int threads, range_fn fn, void *ctx);

/*
 * exp(x) for float32 in a form the compiler vectorises (glibc's expf is a scalar call):
 * Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, Cephes' degree-6 polynomial for
 * e^r, then scaling by 2^n through the exponent bits. Max error ~2 ulp; exp(-inf) = 0,
 * exp(+inf) = inf, NaN stays NaN. (Cephes: https://www.netlib.org/cephes/, single/expf.c)
 */
static inline float fast_expf(float x) {
  const float big = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float xc = x < -104.0f ? -104.0f : (x > 88.75f ? 88.75f : x);
  float n = (xc * 1.44269504088896341f + big) - big;
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /* 2^n as two normal factors, so n in [-150, 128] under/overflows gradually like expf */
  int32_t ni = (int32_t)n, h = ni >> 1;
  union { int32_t i; float f; } s1, s2;
  s1.i = (h + 127) << 23;
  s2.i = (ni - h + 127) << 23;
  float y = p * s1.f * s2.f;
  y = x < -104.0f ? 0.0f : y;
  y = x > 88.75f ? INFINITY : y;
  return x != x ? x : y;
}

/* a . b over d floats in 16 lanes (vectorised: one running sum would be one long add chain); the
   decode attention's scores (fused-decode.c, paged-attention.c: the same sums in both) */
HOT static inline float dot_lanes(const float *a, const float *b, int64_t d) {
  float acc[16] = {0};
  int64_t t = 0;
  for (; t + 16 <= d; t += 16)
    for (int l = 0; l < 16; l++) acc[l] += a[t + l] * b[t + l];
  float s = 0;
  for (; t < d; t++) s += a[t] * b[t];
  for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
  return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* o[0..d) += w v[0..d) */
HOT static inline void axpy(float *o, float w, const float *v, int64_t d) {
  for (int64_t t = 0; t < d; t++) o[t] += w * v[t];
}

/* Row helpers (reduce.c), 8 float lanes so the loops vectorise: max; sum of exp(row - m);
   sum; out = scale * exp(row - m); and log(sum(exp(row))), stable. */
#define row_max rl2_row_max
#define row_sum_exp rl2_row_sum_exp
#define row_sum rl2_row_sum
#define exp_shifted rl2_exp_shifted
#define row_lse rl2_row_lse
#define online_softmax_row rl2_online_softmax_row
float row_max(const float *row, int64_t cols);
float row_sum_exp(const float *row, int64_t cols, float m);
float row_sum(const float *row, int64_t cols);
void exp_shifted(const float *row, int64_t cols, float m, float scale, float *out);
double row_lse(const float *row, int64_t cols);
/* One query row of a flash-attention tile, online softmax: folds the row's `cols` scores into
   its running max *m and sum *l, rescales its accumulator acc[0..d) by exp(old m - new m), and
   leaves exp(score - new m) in `row` (zeros when every score so far is -inf). */
void online_softmax_row(float *row, int64_t cols, float *m, float *l, float *acc, int64_t d);

/* Weight element types of the decode products (decode-linear.c): float32, bfloat16, float16. */
enum { RL2_WT_F32 = 0, RL2_WT_BF16 = 1, RL2_WT_F16 = 2 };
/* Most rows a product takes the skinny kernel for (a decode step's batch); sgemm above. */
#define SKINNY_ROWS 64
/* decode_linear: y [rows, out] = x [rows, in] W^T (+ bias; into y when `accumulate`) on every
   configured thread, the skinny product up to SKINNY_ROWS rows, else sgemm (over panels of a
   16-bit W, each widened in one thread's cache); 0 when out of memory. */
#define decode_linear rl2_decode_linear
int decode_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                  int accumulate);
/* decode_linears: decode_linear of one x by n W (each into its own y, no accumulate); up to
   SKINNY_ROWS rows (and 4 W) as one job over the threads, so they meet once for all n. */
struct linear_out {
  const void *w;
  const float *bias;
  int64_t out;
  float *y;
};
#define decode_linears rl2_decode_linears
int decode_linears(const float *x, int dtype, int64_t rows, int64_t in, int n, const struct linear_out *outs);
/* y [rows, out] = x [rows, in] W^T (+ bias; added into y when `accumulate`), W [out, in] of
   `dtype`, over `threads` threads (parallel_for's pool): the decode-step product, one pass over W;
   0 when out of memory. weights_to_float: n elements of W as float32 into out. */
#define skinny_linear rl2_skinny_linear
#define weights_to_float rl2_weights_to_float
int skinny_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                   int accumulate, int threads);
void weights_to_float(const void *w, int dtype, int64_t n, float *out);
/* frozen-linear.c: y = x W^T (transpose 0) or y = x W (1, x [rows, out]) with a 16-bit W widened a tile at a
   time into buf (TILE_ELEMS floats, or 16 rows of W when wider). */
#define frozen_product rl2_frozen_product
void frozen_product(const float *x, const uint16_t *w, int dtype, int64_t rows, int64_t in, int64_t out, float *y,
                   int transpose, float *buf);

/* half-bits.c: n float32 values to bfloat16 bits, rounding to nearest even (NaN: 0x7fc0), on
   every thread when n is large. */
#define bf16_bits rl2_bf16_bits
void bf16_bits(const float *x, int64_t n, uint16_t *y);

/* rl2_scratch(slot, n): the calling thread's buffer `slot` of at least n floats, kept and grown
   between calls (no allocation per decode step; each slot is one caller's, see the enum);
   NULL when out of memory. For what stays small (a decode step's rows, one panel of W): it is never freed. */
enum { SCRATCH_X_BF16, SCRATCH_LAYER, SCRATCH_ATTN, SCRATCH_STEP, SCRATCH_PANEL, RL2_SCRATCH_SLOTS };
float *rl2_scratch(int slot, size_t n);

/* Row-wise kernels (softmax, cross-entropy) share this context for parallel_for. */
struct rows_ctx {
  const float *x;
  float *o;
  int64_t cols;
  const int32_t *labels;
  const float *dy;
  int64_t *bad; /* xentForward: first row with label >= cols (each thread its own slot) */
};

/* N-API entry points, one per JS function of the addon (registered in addon.c). */
#define KERNEL(name) napi_value rl2_##name(napi_env env, napi_callback_info info)
KERNEL(gemm);
KERNEL(set_threads);
KERNEL(get_threads);
KERNEL(binary);
KERNEL(compare);
KERNEL(unary);
KERNEL(softmax);
KERNEL(reduce);
KERNEL(transpose);
KERNEL(strided_copy);
KERNEL(gather);
KERNEL(segment_sum);
KERNEL(xent_forward);
KERNEL(xent_backward);
KERNEL(rms_norm);
KERNEL(rms_norm_grad);
KERNEL(swiglu);
KERNEL(swiglu_grad);
KERNEL(rotary);
KERNEL(attention);
KERNEL(attention_grad);
KERNEL(logp_stats);
KERNEL(logp_stats_grad);
KERNEL(adamw);
KERNEL(sum_squares);
KERNEL(decode_layer);
KERNEL(decode_step);
KERNEL(linear);
KERNEL(decode_products);
KERNEL(frozen_linear);
KERNEL(half_bits);
KERNEL(flash_attention);
KERNEL(flash_attention_grad);
KERNEL(retain_freed_memory);
KERNEL(sample_rows);

#endif
