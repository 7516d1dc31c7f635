/* Memory-bound products of decoding: y [rows, out] = x [rows, in] W^T (+ bias) for a few rows
 * (a decode step's batch), W [out, in] in float32, bfloat16 or float16 (converted in registers,
 * float32 accumulation). Output rows are split over all threads (parallel.c's pool); each thread
 * streams its block of W rows once and, for every W row block, runs every batch row against
 * it, so a step reads each weight once whatever the batch. Register tile: 4 W rows x up to 3
 * batch rows (decode-linear-tile.h) of 16 lanes (AVX-512), 8 lanes (AVX2 + FMA), or plain C.
 * Decode products with bfloat16 W on a CPU with AVX512_BF16 take the dot-product tiles (x rounded
 * to bfloat16) at every batch size, prefill included: lanes along k below LANE_MIN_ROWS rows
 * (decode-linear-dot.h), along the batch rows from there (decode-linear-lanes.h). */
#include "kernels.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RL2_X86 1
#endif

/* W rows per register tile, batch rows per register tile, W rows per thread task. */
#define TILE_J 4
#define TILE_R 3
#define BLOCK_J 32

struct skinny {
  const float *x;
  const float *x_bf16; /* x with each block of 2 * lanes columns stored evens first (bfloat16 W) */
  const void *w;
  const float *bias;
  int64_t rows, in, out;
  float *y;
  int dtype, accumulate;
  int64_t next;          /* the next block a thread takes */
  const uint16_t *x_dot; /* x rounded to bfloat16, for the dot-product tiles (NULL: the others) */
  const uint32_t *x_lanes; /* x rounded to bfloat16 in groups of 16 rows, for the lane tiles (NULL: the others) */
};

static inline float half_to_float(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  union { uint32_t u; float f; } v;
  if (e == 0x1f) v.u = s | 0x7f800000u | (m << 13); /* inf / nan */
  else if (e) v.u = s | ((e + 112) << 23) | (m << 13);
  else if (m) { /* subnormal: m * 2^-24 */
    v.f = (float)m * 5.9604644775390625e-8f;
    v.u |= s;
  } else v.u = s;
  return v.f;
}

static inline float weight_at(const void *w, int dtype, int64_t i) {
  if (dtype == RL2_WT_F32) return ((const float *)w)[i];
  uint16_t h = ((const uint16_t *)w)[i];
  if (dtype == RL2_WT_BF16) {
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
  }
  return half_to_float(h);
}

/* plain C for one (W row, batch row) pair from column k0 on: the tails and non-x86 CPUs */
static float dot_from(const struct skinny *c, int64_t j, int64_t r, int64_t k0) {
  const float *x = c->x + r * c->in;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = k0;
  for (; k + 8 <= c->in; k += 8)
    for (int l = 0; l < 8; l++) acc[l] += x[k + l] * weight_at(c->w, c->dtype, j * c->in + k + l);
  for (; k < c->in; k++) acc[0] += x[k] * weight_at(c->w, c->dtype, j * c->in + k);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static inline void store(const struct skinny *c, int64_t j, int64_t r, float v) {
  float *y = c->y + r * c->out + j;
  if (c->bias) v += c->bias[j];
  *y = c->accumulate ? *y + v : v;
}

#ifdef RL2_X86
#define TILE_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,fma"))) static
#define VEC __m512
#define LANES 16
#define SUFFIX _512
#define VLOAD _mm512_loadu_ps
#define VZERO _mm512_setzero_ps
#define VADD _mm512_add_ps
#define VFMA _mm512_fmadd_ps
#define VHSUM _mm512_reduce_add_ps
#define LOAD_BF16(p, h0, h1)                                                                  \
  do {                                                                                        \
    __m512i v_ = _mm512_loadu_si512((const void *)(p));                                       \
    *(h0) = _mm512_castsi512_ps(_mm512_slli_epi32(v_, 16));                                   \
    *(h1) = _mm512_castsi512_ps(_mm512_and_si512(v_, _mm512_set1_epi32((int)0xffff0000u))); \
  } while (0)
#define LOAD_F16(p, h0, h1)                                                  \
  do {                                                                       \
    *(h0) = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)));      \
    *(h1) = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p) + 1));  \
  } while (0)
#include "decode-linear-tile.h"
#undef TILE_ATTR
#undef VEC
#undef LANES
#undef SUFFIX
#undef VLOAD
#undef VZERO
#undef VADD
#undef VFMA
#undef VHSUM
#undef LOAD_BF16
#undef LOAD_F16

#define TILE_ATTR __attribute__((target("avx2,fma,f16c"))) static
TILE_ATTR inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
#define VEC __m256
#define LANES 8
#define SUFFIX _256
#define VLOAD _mm256_loadu_ps
#define VZERO _mm256_setzero_ps
#define VADD _mm256_add_ps
#define VFMA _mm256_fmadd_ps
#define VHSUM hsum8
#define LOAD_BF16(p, h0, h1)                                                                  \
  do {                                                                                        \
    __m256i v_ = _mm256_loadu_si256((const __m256i *)(p));                                    \
    *(h0) = _mm256_castsi256_ps(_mm256_slli_epi32(v_, 16));                                   \
    *(h1) = _mm256_castsi256_ps(_mm256_and_si256(v_, _mm256_set1_epi32((int)0xffff0000u))); \
  } while (0)
#define LOAD_F16(p, h0, h1)                                                  \
  do {                                                                       \
    *(h0) = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)));         \
    *(h1) = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p) + 1));     \
  } while (0)
#include "decode-linear-tile.h"
#undef TILE_ATTR
#include "decode-linear-dot.h"
#include "decode-linear-lanes.h"
#endif

typedef void (*tile_fn)(const struct skinny *c, int64_t j, int nj, int64_t r, int nr, int prefetch);

static void tile_c(const struct skinny *c, int64_t j, int nj, int64_t r, int nr, int prefetch) {
  (void)prefetch;
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < nr; b++) store(c, j + a, r + b, dot_from(c, j + a, r + b, 0));
}

/* The widest tile this CPU runs, its vector lanes, and the bfloat16 dot-product tile where the
   CPU has one (RL2_DECODE_ISA=avx512, =avx2 or =c picks a narrower set, for tests). */
static struct isa {
  tile_fn tile;
  int lanes;
  tile_fn dot;
} pick_isa(void) {
  static struct isa chosen = {NULL, 0, NULL};
  if (chosen.tile) return chosen;
  const char *want = getenv("RL2_DECODE_ISA");
  struct isa t = {tile_c, 0, NULL};
#ifdef RL2_X86
  __builtin_cpu_init();
  int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  int dot = avx512 && __builtin_cpu_supports("avx512bf16");
  if (want && !strcmp(want, "c")) avx512 = avx2 = 0;
  if (want && !strcmp(want, "avx2")) avx512 = 0;
  if (want && *want) dot = 0;
  if (avx512) t = (struct isa){tile_512, 16, dot ? tile_dot : NULL};
  else if (avx2) t = (struct isa){tile_256, 8, NULL};
#else
  (void)want;
#endif
  chosen = t;
  return t;
}

/* Batch rows per pass over a block of W for the dot tiles: about 256 KiB of x, so a prefill's
   rows stay in L2 while the block's tiles run over them (a decode step's batch is one pass). */
static int64_t dot_chunk_rows(int64_t in) {
  int64_t n = (256 << 10) / (2 * in) / DOT_R * DOT_R;
  return n < DOT_R ? DOT_R : n;
}

/* W rows per thread task */
static int64_t block_rows(const struct skinny *c) {
#ifdef RL2_X86
  if (c->x_lanes) return LANE_BLOCK_J;
#endif
  (void)c;
  return BLOCK_J;
}

static void skinny_blocks(const struct skinny *c, int64_t b0, int64_t b1) {
#ifdef RL2_X86
  if (c->x_lanes) {
    lane_blocks(c, b0, b1);
    return;
  }
#endif
  struct isa isa = pick_isa();
  tile_fn tile = c->x_dot ? isa.dot : isa.tile;
  int64_t tr = c->x_dot ? DOT_R : TILE_R, chunk = c->x_dot ? dot_chunk_rows(c->in) : c->rows;
  int64_t j1 = b1 * BLOCK_J < c->out ? b1 * BLOCK_J : c->out;
  for (int64_t r0 = 0; r0 < c->rows; r0 += chunk) {
    int64_t r1 = r0 + chunk < c->rows ? r0 + chunk : c->rows;
    for (int64_t j = b0 * BLOCK_J; j < j1; j += TILE_J) {
      int nj = j1 - j < TILE_J ? (int)(j1 - j) : TILE_J;
      for (int64_t r = r0; r < r1; r += tr) tile(c, j, nj, r, r1 - r < tr ? (int)(r1 - r) : (int)tr, r == r0);
    }
  }
}

/* each thread takes the next BLOCK_J rows of W until none are left (a thread the OS
   descheduled holds up one block, not a fixed half of the product) */
static void skinny_worker(void *vctx, int64_t t0, int64_t t1) {
  struct skinny *c = (struct skinny *)vctx;
  int64_t blocks = (c->out + block_rows(c) - 1) / block_rows(c);
  (void)t0, (void)t1;
  for (;;) {
    int64_t b = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
    if (b >= blocks) return;
    skinny_blocks(c, b, b + 1);
  }
}

/* x [rows, in] with each full block of 2 * lanes columns reordered evens first, into out */
static void interleave_for_bf16(const float *x, int64_t rows, int64_t in, int lanes, float *out) {
  int64_t step = 2 * (int64_t)lanes, kv = in / step * step;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * in;
    float *o = out + r * in;
    for (int64_t k = 0; k < kv; k += step)
      for (int l = 0; l < lanes; l++) {
        o[k + l] = xr[k + 2 * l];
        o[k + lanes + l] = xr[k + 2 * l + 1];
      }
    for (int64_t k = kv; k < in; k++) o[k] = xr[k];
  }
}

/* x as the tiles read it, into c: rounded to bfloat16 for the dot tiles (`dot`), or for the
   bfloat16 FMA tiles each block of 2 * lanes columns reordered evens first; 0 when out of memory */
static int prepare_x(struct skinny *c, int dot) {
  struct isa isa = pick_isa();
  c->x_bf16 = c->x;
  c->x_dot = NULL;
  c->x_lanes = NULL;
  if (c->dtype != RL2_WT_BF16 || !isa.lanes) return 1;
#ifdef RL2_X86
  if (dot && isa.dot && c->rows >= LANE_MIN_ROWS) {
    int64_t words = (c->rows + 15) / 16 * group_words(c->in);
    float *buf = rl2_scratch(SCRATCH_X_BF16, (size_t)(words + (c->rows * c->in + 1) / 2));
    if (!buf) return 0;
    pack_lanes(c->x, c->rows, c->in, (uint16_t *)(buf + words), (uint32_t *)buf);
    c->x_lanes = (const uint32_t *)buf;
    return 1;
  }
#endif
  float *buf = rl2_scratch(SCRATCH_X_BF16, (size_t)(c->rows * c->in));
  if (!buf) return 0;
  if (dot && isa.dot) {
    bf16_bits(c->x, c->rows * c->in, (uint16_t *)buf);
    c->x_dot = (const uint16_t *)buf;
    return 1;
  }
  interleave_for_bf16(c->x, c->rows, c->in, isa.lanes, buf);
  c->x_bf16 = buf;
  return 1;
}

/* whether decode products of `dtype` take the dot-product tiles (bfloat16 W, AVX512_BF16) */
static int takes_dot(int dtype) { return dtype == RL2_WT_BF16 && pick_isa().dot != NULL; }

static int skinny_product(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out,
                          float *y, int accumulate, int threads, int dot) {
  struct skinny c = {x, x, w, bias, rows, in, out, y, dtype, accumulate, 0, NULL};
  if (!prepare_x(&c, dot)) return 0;
  int64_t blocks = (out + block_rows(&c) - 1) / block_rows(&c);
  /* below ~64k multiply-adds a thread's wake-up costs more than its share */
  if (rows * in * out < (1 << 16) || threads < 1) threads = 1;
  if (threads == 1) skinny_blocks(&c, 0, blocks);
  else parallel_for_threads(threads, threads, skinny_worker, &c);
  return 1;
}

int skinny_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                  int accumulate, int threads) {
  return skinny_product(x, w, dtype, bias, rows, in, out, y, accumulate, threads, 0);
}

/* Products of one x by several W (q, k and v; gate and up) as one job: the threads take the blocks
   of every W in turn from one counter and meet once for all of them, not once per product. */
#define MAX_PARTS 4
struct skinny_group {
  struct skinny part[MAX_PARTS];
  int64_t first[MAX_PARTS + 1]; /* part p holds the group's blocks first[p] .. first[p + 1] - 1 */
  int parts;
  int64_t next;
};

static void group_worker(void *vctx, int64_t t0, int64_t t1) {
  struct skinny_group *g = (struct skinny_group *)vctx;
  (void)t0, (void)t1;
  for (;;) {
    int64_t b = __atomic_fetch_add(&g->next, 1, __ATOMIC_RELAXED);
    if (b >= g->first[g->parts]) return;
    int p = 0;
    while (b >= g->first[p + 1]) p++;
    skinny_blocks(&g->part[p], b - g->first[p], b - g->first[p] + 1);
  }
}

static int skinny_linears(const float *x, int dtype, int64_t rows, int64_t in, int n, const struct linear_out *outs,
                          int threads) {
  struct skinny_group g = {.parts = n, .next = 0};
  struct skinny shared = {x, x, NULL, NULL, rows, in, 0, NULL, dtype, 0, 0, NULL};
  if (!prepare_x(&shared, takes_dot(dtype))) return 0;
  int64_t work = 0;
  g.first[0] = 0;
  for (int p = 0; p < n; p++) {
    g.part[p] = shared;
    g.part[p].w = outs[p].w;
    g.part[p].bias = outs[p].bias;
    g.part[p].out = outs[p].out;
    g.part[p].y = outs[p].y;
    g.first[p + 1] = g.first[p] + (outs[p].out + block_rows(&g.part[p]) - 1) / block_rows(&g.part[p]);
    work += rows * in * outs[p].out;
  }
  if (work < (1 << 16) || threads < 1) threads = 1;
  if (threads == 1)
    for (int p = 0; p < n; p++) skinny_blocks(&g.part[p], 0, g.first[p + 1] - g.first[p]);
  else parallel_for_threads(threads, threads, group_worker, &g);
  return 1;
}

int decode_linears(const float *x, int dtype, int64_t rows, int64_t in, int n, const struct linear_out *outs) {
  if ((rows <= SKINNY_ROWS || takes_dot(dtype)) && n <= MAX_PARTS)
    return skinny_linears(x, dtype, rows, in, n, outs, openblas_get_num_threads());
  for (int p = 0; p < n; p++)
    if (!decode_linear(x, outs[p].w, dtype, outs[p].bias, rows, in, outs[p].out, outs[p].y, 0)) return 0;
  return 1;
}

/* n 16-bit weights widened to float32 (loops the compiler vectorises) */
static void widen_bf16(const uint16_t *w, int64_t n, float *out) {
  uint32_t *o = (uint32_t *)out;
  for (int64_t i = 0; i < n; i++) o[i] = (uint32_t)w[i] << 16;
}

#ifdef RL2_X86
__attribute__((target("avx2,f16c"))) static void widen_f16_f16c(const uint16_t *w, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))));
  for (; i < n; i++) out[i] = half_to_float(w[i]);
}
#endif

static void widen_f16(const uint16_t *w, int64_t n, float *out) {
#ifdef RL2_X86
  if (pick_isa().lanes) {
    widen_f16_f16c(w, n, out);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) out[i] = half_to_float(w[i]);
}

void weights_to_float(const void *w, int dtype, int64_t n, float *out) {
  if (dtype == RL2_WT_F32) memcpy(out, w, sizeof(float) * (size_t)n);
  else if (dtype == RL2_WT_BF16) widen_bf16(w, n, out);
  else widen_f16(w, n, out);
}

/* Products of many rows (a prefill) with 16-bit W: W in panels of `panel` rows, each thread
   taking the next panel and widening it into its own scratch, where it stays in cache for the
   panel's single-threaded sgemm over every row of x. */
struct panels {
  const float *x;
  const void *w;
  const float *bias;
  int64_t rows, in, out, panel;
  float *y;
  int dtype, accumulate;
  int64_t next;
  volatile int failed;
};

static void panel_product(struct panels *c, int64_t j0, int64_t nj) {
  const float *wp = (const float *)c->w + j0 * c->in;
  if (c->dtype != RL2_WT_F32) {
    float *buf = rl2_scratch(SCRATCH_PANEL, (size_t)(nj * c->in));
    if (!buf) {
      c->failed = 1;
      return;
    }
    weights_to_float((const uint16_t *)c->w + j0 * c->in, c->dtype, nj * c->in, buf);
    wp = buf;
  }
  float beta = c->accumulate ? 1.0f : 0.0f;
  if (c->bias) {
    for (int64_t r = 0; r < c->rows; r++) {
      float *yr = c->y + r * c->out + j0;
      for (int64_t j = 0; j < nj; j++) yr[j] = (c->accumulate ? yr[j] : 0.0f) + c->bias[j0 + j];
    }
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)c->rows, (int)nj, (int)c->in, 1.0f, c->x, (int)c->in, wp,
              (int)c->in, beta, c->y + j0, (int)c->out);
}

static void panel_worker(void *vctx, int64_t t0, int64_t t1) {
  struct panels *c = (struct panels *)vctx;
  (void)t0, (void)t1;
  for (;;) {
    int64_t p = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED), j0 = p * c->panel;
    if (j0 >= c->out || c->failed) return;
    panel_product(c, j0, c->out - j0 < c->panel ? c->out - j0 : c->panel);
  }
}

/* W rows per panel: at least two panels a thread where that leaves 64 or more, at most 256 */
static int64_t panel_rows(int64_t out, int threads) {
  int64_t p = (out + 2 * threads - 1) / (2 * threads);
  p = (p + 15) / 16 * 16;
  return p < 64 ? 64 : p > 256 ? 256 : p;
}

static int panel_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out,
                        float *y, int accumulate, int threads) {
  struct panels c = {x, w, bias, rows, in, out, panel_rows(out, threads), y, dtype, accumulate, 0, 0};
  int configured = openblas_get_num_threads();
  if (configured > 1) openblas_set_num_threads(1);
  parallel_for_threads(threads, threads, panel_worker, &c);
  if (configured > 1) openblas_set_num_threads(configured);
  return !c.failed;
}

/* float32 W: OpenBLAS's own sgemm, threaded by it when large (below 2^24 multiply-adds one thread) */
static void sgemm_linear(const float *x, const float *w, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                         int accumulate) {
  float beta = accumulate ? 1.0f : 0.0f;
  if (bias) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < out; j++) y[r * out + j] = (accumulate ? y[r * out + j] : 0.0f) + bias[j];
    beta = 1.0f;
  }
  int configured = openblas_get_num_threads(), small = rows * in * out < (1 << 24);
  if (small && configured > 1) openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f, x, (int)in, w, (int)in, beta, y,
              (int)out);
  if (small && configured > 1) openblas_set_num_threads(configured);
}

int decode_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                  int accumulate) {
  int threads = openblas_get_num_threads(), dot = takes_dot(dtype);
  if (rows <= SKINNY_ROWS || dot) return skinny_product(x, w, dtype, bias, rows, in, out, y, accumulate, threads, dot);
  if (dtype == RL2_WT_F32) {
    sgemm_linear(x, w, bias, rows, in, out, y, accumulate);
    return 1;
  }
  return panel_linear(x, w, dtype, bias, rows, in, out, y, accumulate, threads);
}

/* linear(x [rows, in], w [out, in] (Float32Array, or Uint16Array of bf16 / f16 bits), weightDtype, rows, in, out,
   y [rows, out]): y = x W^T, the skinny product up to SKINNY_ROWS rows, sgemm above (over panels of a 16-bit W). */
KERNEL(linear) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) FAIL("linear expects x, w, weightDtype, rows, in, out, y");
  int32_t dtype;
  int64_t rows, in, out;
  if (napi_get_value_int32(env, argv[2], &dtype) != napi_ok || dtype < RL2_WT_F32 || dtype > RL2_WT_F16)
    FAIL("linear: weightDtype must be 0 (float32), 1 (bfloat16) or 2 (float16)");
  if (napi_get_value_int64(env, argv[3], &rows) != napi_ok || napi_get_value_int64(env, argv[4], &in) != napi_ok ||
      napi_get_value_int64(env, argv[5], &out) != napi_ok || rows < 0 || in < 1 || out < 1)
    FAIL("linear: rows, in, out must be integers (rows >= 0, in and out >= 1)");
  napi_typedarray_type tx, tw, ty;
  size_t lx, lw, ly;
  void *x, *w, *y;
  if (napi_get_typedarray_info(env, argv[0], &tx, &lx, &x, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[1], &tw, &lw, &w, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[6], &ty, &ly, &y, NULL, NULL) != napi_ok || tx != napi_float32_array ||
      ty != napi_float32_array || tw != (dtype == RL2_WT_F32 ? napi_float32_array : napi_uint16_array))
    FAIL("linear expects Float32Array x, y and w a Float32Array (weightDtype 0) or Uint16Array (1, 2)");
  if (lx < (size_t)(rows * in) || lw < (size_t)(out * in) || ly < (size_t)(rows * out)) FAIL("linear: array too short for dims");
  if (!decode_linear(x, w, dtype, NULL, rows, in, out, y, 0)) FAIL("linear: out of memory");
  return NULL;
}

/* decodeProducts(): the tiles decode products run on this CPU: "avx512-bf16-dot" (bfloat16 W by
   dot products, x rounded to bfloat16), "avx512", "avx2" or "c". */
KERNEL(decode_products) {
  (void)info;
  struct isa isa = pick_isa();
  const char *name = isa.dot ? "avx512-bf16-dot" : isa.lanes == 16 ? "avx512" : isa.lanes == 8 ? "avx2" : "c";
  napi_value out;
  CHECK(napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &out));
  return out;
}
