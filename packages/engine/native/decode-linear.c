/* Memory-bound products of decoding: y [rows, out] = x [rows, in] W^T (+ bias) for a few rows
 * (a decode step's batch), W [out, in] in float32, bfloat16 or float16 (converted in registers,
 * float32 accumulation). Output rows are split over all threads (parallel.c's pool); each thread
 * streams its block of W rows once and, for every W row block, runs every batch row against
 * it, so a step reads each weight once whatever the batch. Register tile: 4 W rows x 4 batch
 * rows of 16 lanes (AVX-512), 8 lanes (AVX2 + FMA), or plain C elsewhere. */
#include "kernels.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RL2_X86 1
#endif

/* W rows per register tile, batch rows per register tile, W rows per thread task. */
#define TILE_J 4
#define TILE_R 4
#define BLOCK_J 32

struct skinny {
  const float *x;
  const void *w;
  const float *bias;
  int64_t rows, in, out;
  float *y;
  int dtype, accumulate;
  int64_t next; /* the next block a thread takes */
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
/* The next tile's W rows, column k on: each row is its own short stream (a 1024-float row is one
   4 KiB page, where hardware prefetchers stop), so the tile being summed fetches the next one. */
static inline void prefetch_next(const struct skinny *c, int64_t j, int64_t k) {
  size_t elem = c->dtype == RL2_WT_F32 ? 4 : 2;
  if (j < c->out) _mm_prefetch((const char *)c->w + (size_t)(j * c->in + k) * elem, _MM_HINT_T0);
}

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma"))) static
#define AVX2 __attribute__((target("avx2,fma,f16c"))) static

AVX512 inline __m512 load16(const void *w, int dtype, int64_t i) {
  if (dtype == RL2_WT_F32) return _mm512_loadu_ps((const float *)w + i);
  __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
  if (dtype == RL2_WT_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

/* nj W rows from j, nr batch rows from r: columns 0 .. in/16*16 in registers, the rest in C */
AVX512 inline __attribute__((always_inline)) void tile512_at(const struct skinny *c, int64_t j, int nj, int64_t r, int nr) {
  __m512 acc[TILE_J][TILE_R];
  for (int a = 0; a < TILE_J; a++)
    for (int b = 0; b < TILE_R; b++) acc[a][b] = _mm512_setzero_ps();
  int64_t in = c->in, kv = in / 16 * 16;
  const float *x = c->x + r * in;
  for (int64_t k = 0; k < kv; k += 16) {
    __m512 xv[TILE_R], wv[TILE_J];
    for (int b = 0; b < TILE_R; b++)
      xv[b] = b < nr ? _mm512_loadu_ps(x + b * in + k) : _mm512_setzero_ps();
    for (int a = 0; a < TILE_J; a++) {
      wv[a] = a < nj ? load16(c->w, c->dtype, (j + a) * in + k) : _mm512_setzero_ps();
      prefetch_next(c, j + TILE_J + a, k);
    }
    for (int a = 0; a < TILE_J; a++)
      for (int b = 0; b < TILE_R; b++)
        if (a < nj && b < nr) acc[a][b] = _mm512_fmadd_ps(wv[a], xv[b], acc[a][b]);
  }
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < nr; b++)
      store(c, j + a, r + b, _mm512_reduce_add_ps(acc[a][b]) + (kv < in ? dot_from(c, j + a, r + b, kv) : 0.0f));
}

/* full tiles with constant sizes (the compiler keeps every accumulator in a register) */
AVX512 void tile512(const struct skinny *c, int64_t j, int nj, int64_t r, int nr) {
  if (nj == TILE_J && nr == 4) tile512_at(c, j, TILE_J, r, 4);
  else if (nj == TILE_J && nr == 1) tile512_at(c, j, TILE_J, r, 1);
  else if (nj == TILE_J && nr == 2) tile512_at(c, j, TILE_J, r, 2);
  else if (nj == TILE_J && nr == 3) tile512_at(c, j, TILE_J, r, 3);
  else tile512_at(c, j, nj, r, nr);
}

AVX2 inline __m256 load8(const void *w, int dtype, int64_t i) {
  if (dtype == RL2_WT_F32) return _mm256_loadu_ps((const float *)w + i);
  __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
  if (dtype == RL2_WT_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

AVX2 inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

AVX2 inline __attribute__((always_inline)) void tile256_at(const struct skinny *c, int64_t j, int nj, int64_t r, int nr) {
  __m256 acc[TILE_J][TILE_R];
  for (int a = 0; a < TILE_J; a++)
    for (int b = 0; b < TILE_R; b++) acc[a][b] = _mm256_setzero_ps();
  int64_t in = c->in, kv = in / 8 * 8;
  const float *x = c->x + r * in;
  for (int64_t k = 0; k < kv; k += 8) {
    __m256 xv[TILE_R], wv[TILE_J];
    for (int b = 0; b < TILE_R; b++)
      xv[b] = b < nr ? _mm256_loadu_ps(x + b * in + k) : _mm256_setzero_ps();
    for (int a = 0; a < TILE_J; a++) {
      wv[a] = a < nj ? load8(c->w, c->dtype, (j + a) * in + k) : _mm256_setzero_ps();
      if (!(k & 8)) prefetch_next(c, j + TILE_J + a, k);
    }
    for (int a = 0; a < TILE_J; a++)
      for (int b = 0; b < TILE_R; b++)
        if (a < nj && b < nr) acc[a][b] = _mm256_fmadd_ps(wv[a], xv[b], acc[a][b]);
  }
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < nr; b++)
      store(c, j + a, r + b, hsum8(acc[a][b]) + (kv < in ? dot_from(c, j + a, r + b, kv) : 0.0f));
}

/* full tiles with constant sizes (the compiler keeps every accumulator in a register) */
AVX2 void tile256(const struct skinny *c, int64_t j, int nj, int64_t r, int nr) {
  if (nj == TILE_J && nr == 4) tile256_at(c, j, TILE_J, r, 4);
  else if (nj == TILE_J && nr == 1) tile256_at(c, j, TILE_J, r, 1);
  else if (nj == TILE_J && nr == 2) tile256_at(c, j, TILE_J, r, 2);
  else if (nj == TILE_J && nr == 3) tile256_at(c, j, TILE_J, r, 3);
  else tile256_at(c, j, nj, r, nr);
}
#endif

typedef void (*tile_fn)(const struct skinny *c, int64_t j, int nj, int64_t r, int nr);

static void tile_c(const struct skinny *c, int64_t j, int nj, int64_t r, int nr) {
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < nr; b++) store(c, j + a, r + b, dot_from(c, j + a, r + b, 0));
}

/* the widest tile this CPU runs (RL2_DECODE_ISA=avx2 or =c picks a narrower one, for tests) */
static tile_fn pick_tile(void) {
  static tile_fn chosen = NULL;
  if (chosen) return chosen;
  const char *want = getenv("RL2_DECODE_ISA");
  tile_fn t = tile_c;
#ifdef RL2_X86
  __builtin_cpu_init();
  int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (want && !strcmp(want, "c")) avx512 = avx2 = 0;
  if (want && !strcmp(want, "avx2")) avx512 = 0;
  t = avx512 ? tile512 : avx2 ? tile256 : tile_c;
#else
  (void)want;
#endif
  chosen = t;
  return t;
}

static void skinny_blocks(const struct skinny *c, int64_t b0, int64_t b1) {
  tile_fn tile = pick_tile();
  int64_t j1 = b1 * BLOCK_J < c->out ? b1 * BLOCK_J : c->out;
  for (int64_t j = b0 * BLOCK_J; j < j1; j += TILE_J) {
    int nj = j1 - j < TILE_J ? (int)(j1 - j) : TILE_J;
    for (int64_t r = 0; r < c->rows; r += TILE_R) tile(c, j, nj, r, c->rows - r < TILE_R ? (int)(c->rows - r) : TILE_R);
  }
}

/* each thread takes the next BLOCK_J rows of W until none are left (a thread the OS
   descheduled holds up one block, not a fixed half of the product) */
static void skinny_worker(void *vctx, int64_t t0, int64_t t1) {
  struct skinny *c = (struct skinny *)vctx;
  int64_t blocks = (c->out + BLOCK_J - 1) / BLOCK_J;
  (void)t0, (void)t1;
  for (;;) {
    int64_t b = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
    if (b >= blocks) return;
    skinny_blocks(c, b, b + 1);
  }
}

void skinny_linear(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                   int accumulate, int threads) {
  struct skinny c = {x, w, bias, rows, in, out, y, dtype, accumulate, 0};
  int64_t blocks = (out + BLOCK_J - 1) / BLOCK_J;
  /* below ~64k multiply-adds a thread's wake-up costs more than its share */
  if (rows * in * out < (1 << 16) || threads < 1) threads = 1;
  if (threads == 1) skinny_blocks(&c, 0, blocks);
  else parallel_for_threads(threads, threads, skinny_worker, &c);
}

void weights_to_float(const void *w, int dtype, int64_t n, float *out) {
  if (dtype == RL2_WT_F32) {
    memcpy(out, w, sizeof(float) * (size_t)n);
    return;
  }
  for (int64_t i = 0; i < n; i++) out[i] = weight_at(w, dtype, i);
}

/* linear(x [rows, in], w [out, in] (Float32Array, or Uint16Array of bf16 / f16 bits), weightDtype, rows, in, out,
   y [rows, out]): y = x W^T, the skinny product up to 64 rows, sgemm (over a widened copy of a 16-bit W) above. */
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
  if (rows <= 64) {
    skinny_linear(x, w, dtype, NULL, rows, in, out, y, 0, openblas_get_num_threads());
    return NULL;
  }
  const float *wf = w;
  float *widened = NULL;
  if (dtype != RL2_WT_F32) {
    widened = malloc(sizeof(float) * (size_t)(in * out));
    if (!widened) FAIL("linear: out of memory widening 16-bit weights");
    weights_to_float(w, dtype, in * out, widened);
    wf = widened;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f, x, (int)in, wf, (int)in, 0.0f, y,
              (int)out);
  free(widened);
  return NULL;
}
