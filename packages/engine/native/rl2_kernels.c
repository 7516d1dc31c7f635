/*
 * rl2 native kernels: a small N-API addon behind the `native` tfjs backend of @rl2/engine.
 *
 * Every function works on caller-owned TypedArrays (tensors stay plain JS memory, no 4 GiB
 * wasm heap) and writes into an output array the caller allocated. Shapes are checked in
 * TypeScript (src/native-*.ts); here only the array lengths are checked, so that a
 * wrong call throws instead of reading out of bounds.
 *
 * Matrix products go to OpenBLAS cblas_sgemm (any transpose, any batch); the rest are plain
 * loops the compiler vectorises. Single-threaded except sgemm, whose threads are OpenBLAS's
 * own pthreads (they never keep the Node event loop alive, so processes exit on their own).
 */
#define NAPI_VERSION 8
#include <cblas.h>
#include <math.h>
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANK 8

/* Hot loops get an AVX2 clone picked at load time (ifunc); other CPUs run the SSE2 default. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif
/* Bumped whenever a function is added or changes; src/native-addon.ts refuses others. */
#define RL2_KERNELS_ABI 8

#define CHECK(call)                                                                               \
  do {                                                                                            \
    if ((call) != napi_ok) {                                                                      \
      napi_throw_error(env, NULL, "rl2 native: N-API call failed: " #call);                        \
      return NULL;                                                                                \
    }                                                                                             \
  } while (0)

#define FAIL(msg)                                                                                 \
  do {                                                                                            \
    napi_throw_error(env, NULL, "rl2 native: " msg);                                              \
    return NULL;                                                                                  \
  } while (0)

#define ARGS(n)                                                                                   \
  size_t argc = (n);                                                                              \
  napi_value argv[(n) > 0 ? (n) : 1];                                                             \
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));                                    \
  if (argc < (n)) FAIL("too few arguments");

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

static int get_f32(napi_env env, napi_value v, float **data, size_t *len) {
  napi_typedarray_type type;
  void *ptr;
  if (napi_get_typedarray_info(env, v, &type, len, &ptr, NULL, NULL) != napi_ok) return 0;
  if (type != napi_float32_array) return 0;
  *data = (float *)ptr;
  return 1;
}

static int get_i32(napi_env env, napi_value v, int32_t **data, size_t *len) {
  napi_typedarray_type type;
  void *ptr;
  if (napi_get_typedarray_info(env, v, &type, len, &ptr, NULL, NULL) != napi_ok) return 0;
  if (type != napi_int32_array) return 0;
  *data = (int32_t *)ptr;
  return 1;
}

static int64_t get_int(napi_env env, napi_value v) {
  int64_t out = 0;
  napi_get_value_int64(env, v, &out);
  return out;
}

static int get_bool(napi_env env, napi_value v) {
  bool out = false;
  napi_get_value_bool(env, v, &out);
  return out ? 1 : 0;
}

/* Reads a small Int32Array of dims (shape, strides, perm) into `out`; returns its length. */
static int get_dims(napi_env env, napi_value v, int64_t out[MAX_RANK]) {
  int32_t *d;
  size_t n;
  if (!get_i32(env, v, &d, &n) || n > MAX_RANK) return -1;
  for (size_t i = 0; i < n; i++) out[i] = d[i];
  return (int)n;
}

/*
 * gemm(transA, transB, batch, M, N, K, A, strideA, B, strideB, C)
 * C[b] = op(A[b]) @ op(B[b]) for b < batch, row-major; C[b] is [M, N] at offset b*M*N.
 * strideA/strideB are the element offsets between batches (0 broadcasts one matrix).
 * When B is shared and A is not transposed, the batch folds into one [batch*M, K] product.
 */
struct gemm_job {
  CBLAS_TRANSPOSE ta, tb;
  int64_t b0, b1, M, N, K, sa, sb;
  int lda, ldb;
  const float *A, *B;
  float *C;
};

static void *gemm_slice(void *arg) {
  struct gemm_job *j = (struct gemm_job *)arg;
  for (int64_t b = j->b0; b < j->b1; b++) {
    cblas_sgemm(CblasRowMajor, j->ta, j->tb, (int)j->M, (int)j->N, (int)j->K, 1.0f, j->A + b * j->sa, j->lda,
                j->B + b * j->sb, j->ldb, 0.0f, j->C + b * j->M * j->N, (int)j->N);
  }
  return NULL;
}

#define MAX_GEMM_THREADS 64

/*
 * Batched products (attention: [B*heads, T, d]) split the batch over `threads` pthreads, each
 * running a single-threaded sgemm: OpenBLAS's own threading splits one matrix at a time and,
 * for small ones, mostly waits. Threads are joined before returning.
 */
static void gemm_batched_parallel(const struct gemm_job *all, int threads, int configured) {
  pthread_t tids[MAX_GEMM_THREADS];
  struct gemm_job jobs[MAX_GEMM_THREADS];
  int created[MAX_GEMM_THREADS] = {0};
  int64_t batch = all->b1, per = (batch + threads - 1) / threads;
  openblas_set_num_threads(1);
  for (int t = 0; t < threads; t++) {
    jobs[t] = *all;
    jobs[t].b0 = t * per < batch ? t * per : batch;
    jobs[t].b1 = (t + 1) * per < batch ? (t + 1) * per : batch;
    if (jobs[t].b0 >= jobs[t].b1) continue;
    /* the last slice (or one whose thread failed to start) runs on the calling thread */
    created[t] = t < threads - 1 && pthread_create(&tids[t], NULL, gemm_slice, &jobs[t]) == 0;
    if (!created[t]) gemm_slice(&jobs[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (created[t]) pthread_join(tids[t], NULL);
  }
  openblas_set_num_threads(configured);
}

static napi_value gemm(napi_env env, napi_callback_info info) {
  ARGS(11);
  int ta = get_bool(env, argv[0]), tb = get_bool(env, argv[1]);
  int64_t batch = get_int(env, argv[2]), M = get_int(env, argv[3]), N = get_int(env, argv[4]),
          K = get_int(env, argv[5]);
  int64_t sa = get_int(env, argv[7]), sb = get_int(env, argv[9]);
  float *A, *B, *C;
  size_t la, lb, lc;
  if (!get_f32(env, argv[6], &A, &la) || !get_f32(env, argv[8], &B, &lb) ||
      !get_f32(env, argv[10], &C, &lc))
    FAIL("gemm expects Float32Array A, B, C");
  if (batch < 1 || M < 0 || N < 0 || K < 0 || sa < 0 || sb < 0) FAIL("gemm: bad sizes");
  if ((size_t)(batch * M * N) > lc || (size_t)((batch - 1) * sa + M * K) > la ||
      (size_t)((batch - 1) * sb + K * N) > lb)
    FAIL("gemm: array too short for the given sizes");
  if (M == 0 || N == 0) return NULL;
  if (K == 0) {
    memset(C, 0, sizeof(float) * (size_t)(batch * M * N));
    return NULL;
  }
  int lda = ta ? (int)M : (int)K, ldb = tb ? (int)K : (int)N;
  CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if (batch > 1 && sb == 0 && !ta && sa == M * K) {
    cblas_sgemm(CblasRowMajor, TA, TB, (int)(batch * M), (int)N, (int)K, 1.0f, A, lda, B, ldb,
                0.0f, C, (int)N);
    return NULL;
  }
  struct gemm_job job = {TA, TB, 0, batch, M, N, K, sa, sb, lda, ldb, A, B, C};
  int configured = openblas_get_num_threads(), threads = configured;
  if (threads > MAX_GEMM_THREADS) threads = MAX_GEMM_THREADS;
  if (threads > batch) threads = (int)batch;
  /* whole matrices per thread whenever there are enough of them: no OpenBLAS worker
     hand-offs (which stall when the machine is oversubscribed), and small products, which
     OpenBLAS cannot split well, run in parallel too */
  if (threads > 1 && (batch >= threads || M * N * K <= (int64_t)(1 << 21))) {
    gemm_batched_parallel(&job, threads, configured);
    return NULL;
  }
  gemm_slice(&job);
  return NULL;
}

static napi_value set_threads(napi_env env, napi_callback_info info) {
  ARGS(1);
  int n = (int)get_int(env, argv[0]);
  if (n < 1) FAIL("setThreads expects a positive integer");
  openblas_set_num_threads(n);
  return NULL;
}

static napi_value get_threads(napi_env env, napi_callback_info info) {
  napi_value out;
  CHECK(napi_create_int32(env, openblas_get_num_threads(), &out));
  return out;
}

/*
 * parallel_for: runs fn(ctx, begin, end) over [0, n) split across the configured thread count
 * (setThreads), when each piece gets at least `grain` units; pthreads are joined before it
 * returns. Elementwise work on large tensors is memory-bound, so 2-4 threads help most.
 */
typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);
struct range_job {
  range_fn fn;
  void *ctx;
  int64_t begin, end;
};

static void *range_run(void *arg) {
  struct range_job *j = (struct range_job *)arg;
  j->fn(j->ctx, j->begin, j->end);
  return NULL;
}

static void parallel_for_threads(int64_t n, int threads, range_fn fn, void *ctx);

static void parallel_for(int64_t n, int64_t grain, range_fn fn, void *ctx) {
  int threads = openblas_get_num_threads();
  if (grain < 1) grain = 1;
  if ((int64_t)threads > n / grain) threads = (int)(n / grain);
  parallel_for_threads(n, threads, fn, ctx);
}

/* parallel_for over exactly min(threads, n) pieces (at least one unit each). */
static void parallel_for_threads(int64_t n, int threads, range_fn fn, void *ctx) {
  if (threads > MAX_GEMM_THREADS) threads = MAX_GEMM_THREADS;
  if ((int64_t)threads > n) threads = (int)n;
  if (threads <= 1) {
    if (n > 0) fn(ctx, 0, n);
    return;
  }
  pthread_t tids[MAX_GEMM_THREADS];
  struct range_job jobs[MAX_GEMM_THREADS];
  int created[MAX_GEMM_THREADS] = {0};
  int64_t per = (n + threads - 1) / threads;
  for (int t = 0; t < threads; t++) {
    jobs[t].fn = fn;
    jobs[t].ctx = ctx;
    jobs[t].begin = t * per < n ? t * per : n;
    jobs[t].end = (t + 1) * per < n ? (t + 1) * per : n;
    if (jobs[t].begin >= jobs[t].end) continue;
    created[t] = t < threads - 1 && pthread_create(&tids[t], NULL, range_run, &jobs[t]) == 0;
    if (!created[t]) range_run(&jobs[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (created[t]) pthread_join(tids[t], NULL);
  }
}

/* Elements per thread below which starting a thread costs more than it saves. */
#define GRAIN (1 << 16)

/* Binary op codes, shared with src/native-addon.ts. */
enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_SQDIFF, B_POW };

static inline float bin(int op, float a, float b) {
  switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_MAX: return (a > b || isnan(a)) ? a : b;
    case B_MIN: return (a < b || isnan(a)) ? a : b;
    case B_SQDIFF: return (a - b) * (a - b);
    default: return powf(a, b);
  }
}

/* Innermost loop with the op hoisted out so each case vectorises. */
#define BIN_LOOP(EXPR)                                                                            \
  if (sa == 1 && sb == 1) {                                                                       \
    for (int64_t i = 0; i < n; i++) { float x = a[i], y = b[i]; o[i] = (EXPR); }                 \
  } else if (sa == 1 && sb == 0) {                                                                \
    float y = b[0];                                                                               \
    for (int64_t i = 0; i < n; i++) { float x = a[i]; o[i] = (EXPR); }                           \
  } else if (sa == 0 && sb == 1) {                                                                \
    float x = a[0];                                                                               \
    for (int64_t i = 0; i < n; i++) { float y = b[i]; o[i] = (EXPR); }                           \
  } else {                                                                                        \
    for (int64_t i = 0; i < n; i++) { float x = a[i * sa], y = b[i * sb]; o[i] = (EXPR); }       \
  }

HOT static void bin_row(int op, const float *a, int64_t sa, const float *b, int64_t sb, float *o,
                    int64_t n) {
  switch (op) {
    case B_ADD: BIN_LOOP(x + y) break;
    case B_SUB: BIN_LOOP(x - y) break;
    case B_MUL: BIN_LOOP(x * y) break;
    case B_DIV: BIN_LOOP(x / y) break;
    case B_SQDIFF: BIN_LOOP((x - y) * (x - y)) break;
    default: BIN_LOOP(bin(op, x, y)) break;
  }
}

static void broadcast_run(int op, int cmp, const float *a, const int64_t *as, const float *b, const int64_t *bs,
                          void *o, const int64_t *shape, int r, int64_t total);

/*
 * binary(op, a, aStrides, b, bStrides, out, outShape): out[idx] = a[idx·aStrides] op b[idx·bStrides]
 * over the broadcast output shape; a stride of 0 broadcasts that dimension.
 */
/* Elements of a broadcast result of `shape`, and the last element index each input reads
 * (amax, bmax) under its strides: the bounds every broadcasting kernel checks first. */
static int64_t broadcast_extent(const int64_t *shape, const int64_t *as, const int64_t *bs, int r,
                                int64_t *amax, int64_t *bmax) {
  int64_t total = 1;
  *amax = 0;
  *bmax = 0;
  for (int d = 0; d < r; d++) {
    total *= shape[d];
    if (shape[d] > 0) {
      *amax += as[d] * (shape[d] - 1);
      *bmax += bs[d] * (shape[d] - 1);
    }
  }
  return total;
}

static napi_value binary(napi_env env, napi_callback_info info) {
  ARGS(7);
  int op = (int)get_int(env, argv[0]);
  float *a, *b, *o;
  size_t la, lb, lo;
  int64_t as[MAX_RANK], bs[MAX_RANK], shape[MAX_RANK];
  if (!get_f32(env, argv[1], &a, &la) || !get_f32(env, argv[3], &b, &lb) ||
      !get_f32(env, argv[5], &o, &lo))
    FAIL("binary expects Float32Array a, b, out");
  int r = get_dims(env, argv[6], shape);
  if (r < 1 || get_dims(env, argv[2], as) != r || get_dims(env, argv[4], bs) != r)
    FAIL("binary: strides and shape must be Int32Array of the same rank (1..8)");
  int64_t amax, bmax;
  int64_t total = broadcast_extent(shape, as, bs, r, &amax, &bmax);
  if ((size_t)total > lo || (total > 0 && ((size_t)amax >= la || (size_t)bmax >= lb)))
    FAIL("binary: array too short for the given shape");
  if (total == 0) return NULL;
  broadcast_run(op, 0, a, as, b, bs, o, shape, r, total);
  return NULL;
}

/* Comparison op codes, shared with src/native-addon.ts. */
enum { C_EQ, C_NE, C_GT, C_GE, C_LT, C_LE };

HOT static void cmp_row(int op, const float *a, int64_t sa, const float *b, int64_t sb, uint8_t *o, int64_t n) {
  switch (op) {
    case C_EQ: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] == b[i * sb]; break;
    case C_NE: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] != b[i * sb]; break;
    case C_GT: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] > b[i * sb]; break;
    case C_GE: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] >= b[i * sb]; break;
    case C_LT: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] < b[i * sb]; break;
    default: for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] <= b[i * sb]; break;
  }
}

/* A broadcast binary op or comparison over `shape`, rows (or one long row) split across threads. */
struct bcast_ctx {
  int op, cmp, r;
  const float *a, *b;
  void *o;
  const int64_t *as, *bs, *shape;
  int64_t n;
};

static void bcast_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct bcast_ctx *c = (const struct bcast_ctx *)vctx;
  int r = c->r;
  int64_t n = c->n, idx[MAX_RANK] = {0}, rem = r0;
  for (int d = r - 2; d >= 0; d--) {
    idx[d] = rem % c->shape[d];
    rem /= c->shape[d];
  }
  for (int64_t row = r0; row < r1; row++) {
    int64_t ao = 0, bo = 0;
    for (int d = 0; d < r - 1; d++) {
      ao += idx[d] * c->as[d];
      bo += idx[d] * c->bs[d];
    }
    if (c->cmp) cmp_row(c->op, c->a + ao, c->as[r - 1], c->b + bo, c->bs[r - 1], (uint8_t *)c->o + row * n, n);
    else bin_row(c->op, c->a + ao, c->as[r - 1], c->b + bo, c->bs[r - 1], (float *)c->o + row * n, n);
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < c->shape[d]) break;
      idx[d] = 0;
    }
  }
}

/* One row (all leading dims are 1): split its elements instead. */
static void bcast_elems(void *vctx, int64_t e0, int64_t e1) {
  const struct bcast_ctx *c = (const struct bcast_ctx *)vctx;
  int64_t sa = c->as[c->r - 1], sb = c->bs[c->r - 1];
  if (c->cmp) cmp_row(c->op, c->a + e0 * sa, sa, c->b + e0 * sb, sb, (uint8_t *)c->o + e0, e1 - e0);
  else bin_row(c->op, c->a + e0 * sa, sa, c->b + e0 * sb, sb, (float *)c->o + e0, e1 - e0);
}

static void broadcast_run(int op, int cmp, const float *a, const int64_t *as, const float *b, const int64_t *bs,
                          void *o, const int64_t *shape, int r, int64_t total) {
  struct bcast_ctx c = {op, cmp, r, a, b, o, as, bs, shape, shape[r - 1]};
  int64_t rows = total / c.n;
  if (rows == 1) parallel_for(c.n, GRAIN, bcast_elems, &c);
  else parallel_for(rows, GRAIN / c.n + 1, bcast_rows, &c);
}

/* compare(op, a, aStrides, b, bStrides, out Uint8Array, outShape): like binary, out is 0/1 (tfjs bool). */
static napi_value compare(napi_env env, napi_callback_info info) {
  ARGS(7);
  int op = (int)get_int(env, argv[0]);
  float *a, *b;
  uint8_t *o;
  size_t la, lb, lo;
  napi_typedarray_type to;
  void *op_ptr;
  int64_t as[MAX_RANK], bs[MAX_RANK], shape[MAX_RANK];
  if (!get_f32(env, argv[1], &a, &la) || !get_f32(env, argv[3], &b, &lb))
    FAIL("compare expects Float32Array a, b");
  if (napi_get_typedarray_info(env, argv[5], &to, &lo, &op_ptr, NULL, NULL) != napi_ok || to != napi_uint8_array)
    FAIL("compare expects a Uint8Array out");
  o = (uint8_t *)op_ptr;
  int r = get_dims(env, argv[6], shape);
  if (r < 1 || get_dims(env, argv[2], as) != r || get_dims(env, argv[4], bs) != r)
    FAIL("compare: strides and shape must be Int32Array of the same rank (1..8)");
  int64_t amax, bmax;
  int64_t total = broadcast_extent(shape, as, bs, r, &amax, &bmax);
  if ((size_t)total > lo || (total > 0 && ((size_t)amax >= la || (size_t)bmax >= lb)))
    FAIL("compare: array too short for the given shape");
  if (total == 0) return NULL;
  broadcast_run(op, 1, a, as, b, bs, o, shape, r, total);
  return NULL;
}

/* Unary op codes, shared with src/native-addon.ts. */
enum { U_EXP, U_LOG, U_NEG, U_SQRT, U_RSQRT, U_SIGMOID, U_SQUARE, U_RELU, U_TANH, U_ABS, U_RECIP };

HOT static void unary_loop(int op, const float *x, float *o, int64_t n) {
  switch (op) {
    case U_EXP: for (int64_t i = 0; i < n; i++) o[i] = fast_expf(x[i]); break;
    case U_LOG: for (int64_t i = 0; i < n; i++) o[i] = logf(x[i]); break;
    case U_NEG: for (int64_t i = 0; i < n; i++) o[i] = -x[i]; break;
    case U_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrtf(x[i]); break;
    case U_RSQRT: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / sqrtf(x[i]); break;
    case U_SIGMOID: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / (1.0f + fast_expf(-x[i])); break;
    case U_SQUARE: for (int64_t i = 0; i < n; i++) o[i] = x[i] * x[i]; break;
    case U_RELU: for (int64_t i = 0; i < n; i++) o[i] = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0f); break;
    case U_TANH: for (int64_t i = 0; i < n; i++) o[i] = tanhf(x[i]); break;
    case U_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabsf(x[i]); break;
    case U_RECIP: for (int64_t i = 0; i < n; i++) o[i] = 1.0f / x[i]; break;
    default: break;
  }
}

struct unary_ctx {
  int op;
  const float *x;
  float *o;
};

static void unary_range(void *vctx, int64_t e0, int64_t e1) {
  const struct unary_ctx *c = (const struct unary_ctx *)vctx;
  unary_loop(c->op, c->x + e0, c->o + e0, e1 - e0);
}

/* unary(op, x, out): out[i] = f(x[i]). */
static napi_value unary(napi_env env, napi_callback_info info) {
  ARGS(3);
  int op = (int)get_int(env, argv[0]);
  float *x, *o;
  size_t lx, lo;
  if (!get_f32(env, argv[1], &x, &lx) || !get_f32(env, argv[2], &o, &lo) || lo < lx)
    FAIL("unary expects Float32Array x and an out at least as long");
  if (op < U_EXP || op > U_RECIP) FAIL("unary: unknown op code");
  struct unary_ctx c = {op, x, o};
  parallel_for((int64_t)lx, GRAIN, unary_range, &c);
  return NULL;
}

/* max of a row, 8 lanes wide so the loop vectorises (NaN-free rows; NaN propagates via exp). */
HOT static float row_max(const float *row, int64_t cols) {
  float acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; k++) acc[k] = row[c + k] > acc[k] ? row[c + k] : acc[k];
  for (; c < cols; c++) acc[0] = row[c] > acc[0] ? row[c] : acc[0];
  float m = acc[0];
  for (int k = 1; k < 8; k++) m = acc[k] > m ? acc[k] : m;
  return m;
}

/* sum of exp(row - m), 8 float lanes (a row of 8k terms <= 1 loses < 1e-6 relative). */
HOT static float row_sum_exp(const float *row, int64_t cols, float m) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; k++) acc[k] += fast_expf(row[c + k] - m);
  for (; c < cols; c++) acc[0] += fast_expf(row[c] - m);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* sum of a row in 8 float lanes (vectorises; order differs from a serial sum by < 1e-6 relative). */
HOT static float row_sum(const float *row, int64_t cols) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; k++) acc[k] += row[c + k];
  for (; c < cols; c++) acc[0] += row[c];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* out[c] = scale * exp(row[c] - m). */
HOT static void exp_shifted(const float *row, int64_t cols, float m, float scale, float *out) {
  for (int64_t c = 0; c < cols; c++) out[c] = scale * fast_expf(row[c] - m);
}

/* log(sum(exp(row))) of one row, stable (max shifted). */
static double row_lse(const float *row, int64_t cols) {
  float m = row_max(row, cols);
  if (m == -INFINITY) return -INFINITY;
  return m + log((double)row_sum_exp(row, cols, m));
}

/* Row-wise kernels (softmax, cross-entropy) share this context for parallel_for. */
struct rows_ctx {
  const float *x;
  float *o;
  int64_t cols;
  const int32_t *labels;
  const float *dy;
  int64_t *bad; /* xentForward: first row with label >= cols (each thread its own slot) */
};

static void softmax_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct rows_ctx *c = (const struct rows_ctx *)vctx;
  int64_t cols = c->cols;
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = c->x + r * cols;
    float *orow = c->o + r * cols;
    float m = row_max(xr, cols);
    if (m == -INFINITY) m = 0; /* an all -inf row gives NaN like the stock kernel: exp(-inf)/0 */
    exp_shifted(xr, cols, m, 1.0f, orow);
    float inv = 1.0f / row_sum(orow, cols);
    for (int64_t k = 0; k < cols; k++) orow[k] *= inv;
  }
}

/* softmax(x, rows, cols, out): numerically stable softmax over each row of [rows, cols]. */
static napi_value softmax(napi_env env, napi_callback_info info) {
  ARGS(4);
  float *x, *o;
  size_t lx, lo;
  int64_t rows = get_int(env, argv[1]), cols = get_int(env, argv[2]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_f32(env, argv[3], &o, &lo))
    FAIL("softmax expects Float32Array x and out");
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lx || (size_t)(rows * cols) > lo)
    FAIL("softmax: array too short for [rows, cols]");
  struct rows_ctx c = {x, o, cols, NULL, NULL, NULL};
  parallel_for(rows, GRAIN / cols + 1, softmax_rows, &c);
  return NULL;
}

/* Reduction op codes, shared with src/native-addon.ts. */
enum { R_SUM, R_MAX, R_MIN, R_MEAN };

/*
 * reduce(op, x, outer, r, inner, out): x viewed as [outer, r, inner], reduced over the middle
 * axis into out [outer, inner]. Row sums (inner == 1) accumulate in double.
 */
static napi_value reduce(napi_env env, napi_callback_info info) {
  ARGS(6);
  int op = (int)get_int(env, argv[0]);
  float *x, *o;
  size_t lx, lo;
  int64_t outer = get_int(env, argv[2]), r = get_int(env, argv[3]), inner = get_int(env, argv[4]);
  if (!get_f32(env, argv[1], &x, &lx) || !get_f32(env, argv[5], &o, &lo))
    FAIL("reduce expects Float32Array x and out");
  if (outer < 0 || r < 1 || inner < 1 || (size_t)(outer * r * inner) > lx ||
      (size_t)(outer * inner) > lo)
    FAIL("reduce: array too short for [outer, r, inner]");
  for (int64_t i = 0; i < outer; i++) {
    const float *xi = x + i * r * inner;
    float *oi = o + i * inner;
    if (inner == 1) {
      if (op == R_SUM || op == R_MEAN) {
        double s = 0;
        for (int64_t k = 0; k < r; k++) s += xi[k];
        oi[0] = (float)(op == R_MEAN ? s / (double)r : s);
      } else {
        float m = xi[0];
        for (int64_t k = 1; k < r; k++) {
          float v = xi[k];
          if (isnan(v) || (op == R_MAX ? v > m : v < m)) m = v;
        }
        oi[0] = m;
      }
      continue;
    }
    memcpy(oi, xi, sizeof(float) * (size_t)inner);
    for (int64_t k = 1; k < r; k++) {
      const float *row = xi + k * inner;
      if (op == R_SUM || op == R_MEAN) {
        for (int64_t j = 0; j < inner; j++) oi[j] += row[j];
      } else if (op == R_MAX) {
        for (int64_t j = 0; j < inner; j++) oi[j] = (row[j] > oi[j] || isnan(row[j])) ? row[j] : oi[j];
      } else {
        for (int64_t j = 0; j < inner; j++) oi[j] = (row[j] < oi[j] || isnan(row[j])) ? row[j] : oi[j];
      }
    }
    if (op == R_MEAN) {
      float inv = 1.0f / (float)r;
      for (int64_t j = 0; j < inner; j++) oi[j] *= inv;
    }
  }
  return NULL;
}

/*
 * transpose(x, shape, perm, out): out = x permuted, out.shape[d] = shape[perm[d]].
 * Works for any 4-byte element (Float32Array or Int32Array; both passed as float bits).
 */
static napi_value transpose(napi_env env, napi_callback_info info) {
  ARGS(4);
  void *xp, *op;
  size_t lx, lo;
  napi_typedarray_type tx, to;
  int64_t shape[MAX_RANK], perm[MAX_RANK];
  CHECK(napi_get_typedarray_info(env, argv[0], &tx, &lx, &xp, NULL, NULL));
  CHECK(napi_get_typedarray_info(env, argv[3], &to, &lo, &op, NULL, NULL));
  if (tx != to || (tx != napi_float32_array && tx != napi_int32_array))
    FAIL("transpose expects two Float32Arrays or two Int32Arrays");
  int r = get_dims(env, argv[1], shape);
  if (r < 1 || get_dims(env, argv[2], perm) != r) FAIL("transpose: shape and perm must match (rank 1..8)");
  int64_t in_strides[MAX_RANK], os[MAX_RANK], oshape[MAX_RANK], total = 1;
  in_strides[r - 1] = 1;
  for (int d = r - 2; d >= 0; d--) in_strides[d] = in_strides[d + 1] * shape[d + 1];
  for (int d = 0; d < r; d++) {
    if (perm[d] < 0 || perm[d] >= r) FAIL("transpose: perm entry out of range");
    oshape[d] = shape[perm[d]];
    os[d] = in_strides[perm[d]];
    total *= oshape[d];
  }
  if ((size_t)total > lx || (size_t)total > lo) FAIL("transpose: array too short for shape");
  if (total == 0) return NULL;
  const uint32_t *x = (const uint32_t *)xp;
  uint32_t *o = (uint32_t *)op;
  int64_t n = oshape[r - 1], sn = os[r - 1], rows = total / n, idx[MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; row++) {
    int64_t off = 0;
    for (int d = 0; d < r - 1; d++) off += idx[d] * os[d];
    uint32_t *orow = o + row * n;
    if (sn == 1) {
      memcpy(orow, x + off, sizeof(uint32_t) * (size_t)n);
    } else {
      for (int64_t j = 0; j < n; j++) orow[j] = x[off + j * sn];
    }
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}

/*
 * stridedCopy(x, xOffset, xStrides, out, outOffset, outStrides, shape): for every index i of
 * `shape`, out[outOffset + i·outStrides] = x[xOffset + i·xStrides]. 4-byte elements (two
 * Float32Arrays or two Int32Arrays). Slice, SplitV and Concat are all this one copy.
 */
static napi_value strided_copy(napi_env env, napi_callback_info info) {
  ARGS(7);
  void *xp, *op;
  size_t lx, lo;
  napi_typedarray_type tx, to;
  int64_t xs[MAX_RANK], os[MAX_RANK], shape[MAX_RANK];
  CHECK(napi_get_typedarray_info(env, argv[0], &tx, &lx, &xp, NULL, NULL));
  CHECK(napi_get_typedarray_info(env, argv[3], &to, &lo, &op, NULL, NULL));
  if (tx != to || (tx != napi_float32_array && tx != napi_int32_array))
    FAIL("stridedCopy expects two Float32Arrays or two Int32Arrays");
  int64_t xoff = get_int(env, argv[1]), ooff = get_int(env, argv[4]);
  int r = get_dims(env, argv[6], shape);
  if (r < 1 || get_dims(env, argv[2], xs) != r || get_dims(env, argv[5], os) != r)
    FAIL("stridedCopy: strides and shape must be Int32Array of the same rank (1..8)");
  int64_t total = 1, xmax = xoff, omax = ooff;
  for (int d = 0; d < r; d++) {
    if (shape[d] < 0 || xs[d] < 0 || os[d] < 0) FAIL("stridedCopy: negative shape or stride");
    total *= shape[d];
    if (shape[d] > 0) {
      xmax += xs[d] * (shape[d] - 1);
      omax += os[d] * (shape[d] - 1);
    }
  }
  if (total == 0) return NULL;
  if (xoff < 0 || ooff < 0 || (size_t)xmax >= lx || (size_t)omax >= lo) FAIL("stridedCopy: index out of range");
  const uint32_t *x = (const uint32_t *)xp;
  uint32_t *o = (uint32_t *)op;
  int64_t n = shape[r - 1], rows = total / n, idx[MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; row++) {
    int64_t xo = xoff, oo = ooff;
    for (int d = 0; d < r - 1; d++) {
      xo += idx[d] * xs[d];
      oo += idx[d] * os[d];
    }
    if (xs[r - 1] == 1 && os[r - 1] == 1) {
      memcpy(o + oo, x + xo, sizeof(uint32_t) * (size_t)n);
    } else {
      for (int64_t j = 0; j < n; j++) o[oo + j * os[r - 1]] = x[xo + j * xs[r - 1]];
    }
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}

/*
 * gather(x, outer, n, inner, indices, out): x viewed as [outer, n, inner];
 * out[o, i, :] = x[o, indices[i], :]. Returns -1 when all indices are in [0, n), else the
 * position of the first bad index (out is then incomplete).
 */
static napi_value gather(napi_env env, napi_callback_info info) {
  ARGS(6);
  float *x, *o;
  int32_t *ix;
  size_t lx, lo, li;
  int64_t outer = get_int(env, argv[1]), n = get_int(env, argv[2]), inner = get_int(env, argv[3]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_i32(env, argv[4], &ix, &li) ||
      !get_f32(env, argv[5], &o, &lo))
    FAIL("gather expects Float32Array x, Int32Array indices, Float32Array out");
  if (outer < 0 || n < 0 || inner < 0 || (size_t)(outer * n * inner) > lx ||
      (size_t)(outer * (int64_t)li * inner) > lo)
    FAIL("gather: array too short for [outer, n, inner]");
  int64_t bad = -1;
  for (int64_t a = 0; a < outer && bad < 0; a++) {
    for (int64_t i = 0; i < (int64_t)li; i++) {
      int64_t k = ix[i];
      if (k < 0 || k >= n) {
        bad = i;
        break;
      }
      memcpy(o + (a * (int64_t)li + i) * inner, x + (a * n + k) * inner, sizeof(float) * (size_t)inner);
    }
  }
  napi_value out;
  CHECK(napi_create_int64(env, bad, &out));
  return out;
}

/*
 * segmentSum(x, ids, numSegments, inner, out): x viewed as [ids.length, inner];
 * out[s, :] = sum of x[i, :] over i with ids[i] == s (ids outside [0, numSegments) are dropped,
 * like TensorFlow's UnsortedSegmentSum). out must hold numSegments*inner zeros.
 */
static napi_value segment_sum(napi_env env, napi_callback_info info) {
  ARGS(5);
  float *x, *o;
  int32_t *ids;
  size_t lx, li, lo;
  int64_t segs = get_int(env, argv[2]), inner = get_int(env, argv[3]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_i32(env, argv[1], &ids, &li) ||
      !get_f32(env, argv[4], &o, &lo))
    FAIL("segmentSum expects Float32Array x, Int32Array ids, Float32Array out");
  if (segs < 0 || inner < 0 || (size_t)((int64_t)li * inner) > lx || (size_t)(segs * inner) > lo)
    FAIL("segmentSum: array too short");
  for (int64_t i = 0; i < (int64_t)li; i++) {
    int64_t s = ids[i];
    if (s < 0 || s >= segs) continue;
    float *orow = o + s * inner;
    const float *xr = x + i * inner;
    for (int64_t j = 0; j < inner; j++) orow[j] += xr[j];
  }
  return NULL;
}

/*
 * xentForward(logits [rows, cols], labels [rows], losses [rows]):
 * losses[r] = logsumexp(logits[r]) - logits[r, labels[r]]; rows whose label is < 0 give 0
 * (masked positions). Returns -1, or the first row whose label is >= cols.
 */
static napi_value xent_forward(napi_env env, napi_callback_info info) {
  ARGS(5);
  float *x, *loss;
  int32_t *lab;
  size_t lx, ll, lo;
  int64_t rows = get_int(env, argv[1]), cols = get_int(env, argv[2]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_i32(env, argv[3], &lab, &ll) || !get_f32(env, argv[4], &loss, &lo))
    FAIL("xentForward expects Float32Array logits, Int32Array labels, Float32Array losses");
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lx || (size_t)rows > ll || (size_t)rows > lo)
    FAIL("xentForward: array too short for [rows, cols]");
  int64_t bad = -1;
  for (int64_t r = 0; r < rows; r++) {
    int64_t t = lab[r];
    if (t < 0) {
      loss[r] = 0;
      continue;
    }
    if (t >= cols) {
      if (bad < 0) bad = r;
      loss[r] = NAN;
      continue;
    }
    const float *row = x + r * cols;
    loss[r] = (float)(row_lse(row, cols) - row[t]);
  }
  napi_value out;
  CHECK(napi_create_int64(env, bad, &out));
  return out;
}

static void xent_backward_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct rows_ctx *c = (const struct rows_ctx *)vctx;
  int64_t cols = c->cols;
  for (int64_t r = r0; r < r1; r++) {
    const float *row = c->x + r * cols;
    float *g = c->o + r * cols;
    int64_t t = c->labels[r];
    if (t < 0 || t >= cols) {
      memset(g, 0, sizeof(float) * (size_t)cols);
      continue;
    }
    float lse = (float)row_lse(row, cols), d = c->dy[r];
    exp_shifted(row, cols, lse, d, g);
    g[t] -= d;
  }
}

/*
 * xentBackward(logits [rows, cols], labels [rows], dy [rows], dx [rows, cols]):
 * dx[r, c] = dy[r] * (softmax(logits[r])[c] - [c == labels[r]]); 0 for rows with label < 0.
 */
static napi_value xent_backward(napi_env env, napi_callback_info info) {
  ARGS(6);
  float *x, *dy, *dx;
  int32_t *lab;
  size_t lx, ll, ld, lo;
  int64_t rows = get_int(env, argv[1]), cols = get_int(env, argv[2]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_i32(env, argv[3], &lab, &ll) || !get_f32(env, argv[4], &dy, &ld) ||
      !get_f32(env, argv[5], &dx, &lo))
    FAIL("xentBackward expects Float32Array logits, Int32Array labels, Float32Array dy, Float32Array dx");
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lx || (size_t)rows > ll || (size_t)rows > ld ||
      (size_t)(rows * cols) > lo)
    FAIL("xentBackward: array too short for [rows, cols]");
  struct rows_ctx c = {x, dx, cols, lab, dy, NULL};
  parallel_for(rows, GRAIN / cols + 1, xent_backward_rows, &c);
  return NULL;
}

/* ---- fused model kernels (forward + backward), used by src/fused/fused-*.ts ---- */

struct norm_ctx {
  const float *x, *w, *dy;
  float *y, *dx;
  int64_t h;
  float eps;
};

/* RMSNorm rows (Zhang & Sennrich 2019): y = w * x / sqrt(mean(x^2) + eps). */
HOT static void rms_norm_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct norm_ctx *c = (const struct norm_ctx *)vctx;
  int64_t h = c->h;
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = c->x + r * h;
    float *yr = c->y + r * h;
    float ss = 0;
    for (int64_t k = 0; k < h; k++) ss += xr[k] * xr[k];
    float inv = 1.0f / sqrtf(ss / (float)h + c->eps);
    for (int64_t k = 0; k < h; k++) yr[k] = xr[k] * inv * c->w[k];
  }
}

/* dx = inv * (dy w - xhat * mean(dy w xhat)), xhat = x inv (dw summed separately). */
HOT static void rms_norm_grad_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct norm_ctx *c = (const struct norm_ctx *)vctx;
  int64_t h = c->h;
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = c->x + r * h, *gr = c->dy + r * h;
    float *dxr = c->dx + r * h;
    float ss = 0, dot = 0;
    for (int64_t k = 0; k < h; k++) {
      ss += xr[k] * xr[k];
      dot += gr[k] * c->w[k] * xr[k];
    }
    float inv = 1.0f / sqrtf(ss / (float)h + c->eps);
    float coef = dot * inv * inv / (float)h;
    for (int64_t k = 0; k < h; k++) dxr[k] = inv * (gr[k] * c->w[k] - xr[k] * coef);
  }
}

/* rmsNorm(x [rows, h], w [h], eps, y [rows, h]) */
static napi_value rms_norm(napi_env env, napi_callback_info info) {
  ARGS(6);
  float *x, *w, *y;
  size_t lx, lw, ly;
  int64_t rows = get_int(env, argv[2]), h = get_int(env, argv[3]);
  double eps = 0;
  napi_get_value_double(env, argv[4], &eps);
  if (!get_f32(env, argv[0], &x, &lx) || !get_f32(env, argv[1], &w, &lw) || !get_f32(env, argv[5], &y, &ly))
    FAIL("rmsNorm expects Float32Array x, w, y");
  if (rows < 0 || h < 1 || (size_t)(rows * h) > lx || (size_t)h > lw || (size_t)(rows * h) > ly)
    FAIL("rmsNorm: array too short for [rows, h]");
  struct norm_ctx c = {x, w, NULL, y, NULL, h, (float)eps};
  parallel_for(rows, GRAIN / h + 1, rms_norm_rows, &c);
  return NULL;
}

/* rmsNormGrad(x, w, dy, rows, h, eps, dx [rows, h], dw [h]) */
static napi_value rms_norm_grad(napi_env env, napi_callback_info info) {
  ARGS(8);
  float *x, *w, *dy, *dx, *dw;
  size_t lx, lw, ld, ldx, ldw;
  int64_t rows = get_int(env, argv[3]), h = get_int(env, argv[4]);
  double eps = 0;
  napi_get_value_double(env, argv[5], &eps);
  if (!get_f32(env, argv[0], &x, &lx) || !get_f32(env, argv[1], &w, &lw) || !get_f32(env, argv[2], &dy, &ld) ||
      !get_f32(env, argv[6], &dx, &ldx) || !get_f32(env, argv[7], &dw, &ldw))
    FAIL("rmsNormGrad expects Float32Array x, w, dy, dx, dw");
  size_t n = (size_t)(rows * h);
  if (rows < 0 || h < 1 || n > lx || (size_t)h > lw || n > ld || n > ldx || (size_t)h > ldw)
    FAIL("rmsNormGrad: array too short for [rows, h]");
  struct norm_ctx c = {x, w, dy, NULL, dx, h, (float)eps};
  parallel_for(rows, GRAIN / h + 1, rms_norm_grad_rows, &c);
  /* dw[k] = sum_r dy[r,k] xhat[r,k], accumulated in double */
  double *acc = calloc((size_t)h, sizeof(double));
  if (!acc) FAIL("rmsNormGrad: out of memory");
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * h, *gr = dy + r * h;
    float ss = 0;
    for (int64_t k = 0; k < h; k++) ss += xr[k] * xr[k];
    float inv = 1.0f / sqrtf(ss / (float)h + (float)eps);
    for (int64_t k = 0; k < h; k++) acc[k] += (double)(gr[k] * xr[k] * inv);
  }
  for (int64_t k = 0; k < h; k++) dw[k] = (float)acc[k];
  free(acc);
  return NULL;
}

struct glu_ctx {
  const float *g, *u, *dy;
  float *y, *dg, *du;
};

static inline float sigmoidf_(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

HOT static void swiglu_range(void *vctx, int64_t i0, int64_t i1) {
  const struct glu_ctx *c = (const struct glu_ctx *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i];
    c->y[i] = g * sigmoidf_(g) * c->u[i];
  }
}

/* d/dg silu(g) u = u s (1 + g (1 - s)), d/du = g s, s = sigmoid(g) */
HOT static void swiglu_grad_range(void *vctx, int64_t i0, int64_t i1) {
  const struct glu_ctx *c = (const struct glu_ctx *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i], s = sigmoidf_(g), d = c->dy[i];
    c->dg[i] = d * c->u[i] * s * (1.0f + g * (1.0f - s));
    c->du[i] = d * g * s;
  }
}

/* swiglu(gate, up, y) and swigluGrad(gate, up, dy, dgate, dup), all of one length */
static napi_value swiglu(napi_env env, napi_callback_info info) {
  ARGS(3);
  float *g, *u, *y;
  size_t lg, lu, ly;
  if (!get_f32(env, argv[0], &g, &lg) || !get_f32(env, argv[1], &u, &lu) || !get_f32(env, argv[2], &y, &ly))
    FAIL("swiglu expects Float32Array gate, up, y");
  if (lu < lg || ly < lg) FAIL("swiglu: arrays of different lengths");
  struct glu_ctx c = {g, u, NULL, y, NULL, NULL};
  parallel_for((int64_t)lg, GRAIN, swiglu_range, &c);
  return NULL;
}

static napi_value swiglu_grad(napi_env env, napi_callback_info info) {
  ARGS(5);
  float *g, *u, *dy, *dg, *du;
  size_t lg, lu, ld, l1, l2;
  if (!get_f32(env, argv[0], &g, &lg) || !get_f32(env, argv[1], &u, &lu) || !get_f32(env, argv[2], &dy, &ld) ||
      !get_f32(env, argv[3], &dg, &l1) || !get_f32(env, argv[4], &du, &l2))
    FAIL("swigluGrad expects Float32Array gate, up, dy, dgate, dup");
  if (lu < lg || ld < lg || l1 < lg || l2 < lg) FAIL("swigluGrad: arrays of different lengths");
  struct glu_ctx c = {g, u, dy, NULL, dg, du};
  parallel_for((int64_t)lg, GRAIN, swiglu_grad_range, &c);
  return NULL;
}

/*
 * rotary(x [n, heads, d], cos [n, d], sin [n, d], n, heads, d, backward, out): RoPE with
 * rotate_half (HF layout). Forward out = x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1].
 * Backward (the transpose): dx1 = dy1 c1 + dy2 s2, dx2 = dy2 c2 - dy1 s1.
 */
static napi_value rotary(napi_env env, napi_callback_info info) {
  ARGS(8);
  float *x, *cs, *sn, *o;
  size_t lx, lc, ls, lo;
  int64_t n = get_int(env, argv[3]), heads = get_int(env, argv[4]), d = get_int(env, argv[5]);
  int back = get_bool(env, argv[6]);
  if (!get_f32(env, argv[0], &x, &lx) || !get_f32(env, argv[1], &cs, &lc) || !get_f32(env, argv[2], &sn, &ls) ||
      !get_f32(env, argv[7], &o, &lo))
    FAIL("rotary expects Float32Array x, cos, sin, out");
  if (n < 0 || heads < 1 || d < 2 || d % 2 || (size_t)(n * heads * d) > lx || (size_t)(n * heads * d) > lo ||
      (size_t)(n * d) > lc || (size_t)(n * d) > ls)
    FAIL("rotary: array too short for [n, heads, d]");
  int64_t half = d / 2;
  for (int64_t t = 0; t < n; t++) {
    const float *c = cs + t * d, *s = sn + t * d;
    for (int64_t hh = 0; hh < heads; hh++) {
      const float *xr = x + (t * heads + hh) * d;
      float *orow = o + (t * heads + hh) * d;
      for (int64_t j = 0; j < half; j++) {
        float a = xr[j], b = xr[j + half];
        if (back) {
          orow[j] = a * c[j] + b * s[j + half];
          orow[j + half] = b * c[j + half] - a * s[j];
        } else {
          orow[j] = a * c[j] - b * s[j];
          orow[j + half] = b * c[j + half] + a * s[j + half];
        }
      }
    }
  }
  return NULL;
}

/*
 * Attention over one (batch b, kv head) group: its `rep` query heads read K/V [L, d].
 * q/out/dq: [B, S, nH, d] (row stride nH*d); k/v/dk/dv: [B, nKv, L, d]; mask additive
 * [Bm, S, L] (Bm 1 broadcasts). P = softmax(scale q k^T + mask), out = P v.
 * Backward recomputes P (nothing [S, L] is kept between the passes):
 * dP = dout v^T, dS = P (dP - rowsum(P dP)), dq = scale dS k, dk += scale dS^T q, dv += P^T dout.
 */
struct attn_ctx {
  const float *q, *k, *v, *mask, *dout;
  float *out, *dq, *dk, *dv;
  int64_t B, S, L, nH, nKv, d, maskB;
  float scale;
};

static void attn_probs(const struct attn_ctx *c, int64_t b, int64_t h, float *P) {
  int64_t kvh = h / (c->nH / c->nKv);
  int64_t ldq = c->nH * c->d;
  const float *Q = c->q + b * c->S * ldq + h * c->d;
  const float *K = c->k + (b * c->nKv + kvh) * c->L * c->d;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)c->S, (int)c->L, (int)c->d, c->scale, Q, (int)ldq, K,
              (int)c->d, 0.0f, P, (int)c->L);
  const float *M = c->mask + (c->maskB == 1 ? 0 : b) * c->S * c->L;
  for (int64_t i = 0; i < c->S; i++) {
    float *row = P + i * c->L;
    const float *mr = M + i * c->L;
    for (int64_t j = 0; j < c->L; j++) row[j] += mr[j];
    float m = row_max(row, c->L);
    exp_shifted(row, c->L, m, 1.0f, row);
    float inv = 1.0f / row_sum(row, c->L);
    for (int64_t j = 0; j < c->L; j++) row[j] *= inv;
  }
}

static void attn_fwd_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct attn_ctx *c = (const struct attn_ctx *)vctx;
  int64_t rep = c->nH / c->nKv, ldq = c->nH * c->d;
  float *P = malloc(sizeof(float) * (size_t)(c->S * c->L));
  if (!P) return;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    const float *V = c->v + (b * c->nKv + kvh) * c->L * c->d;
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      attn_probs(c, b, h, P);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->S, (int)c->d, (int)c->L, 1.0f, P, (int)c->L, V,
                  (int)c->d, 0.0f, c->out + b * c->S * ldq + h * c->d, (int)ldq);
    }
  }
  free(P);
}

static void attn_bwd_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct attn_ctx *c = (const struct attn_ctx *)vctx;
  int64_t rep = c->nH / c->nKv, ldq = c->nH * c->d, S = c->S, L = c->L, d = c->d;
  float *P = malloc(sizeof(float) * (size_t)(2 * S * L));
  if (!P) return;
  float *dP = P + S * L;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    const float *K = c->k + (b * c->nKv + kvh) * L * d, *V = c->v + (b * c->nKv + kvh) * L * d;
    float *dK = c->dk + (b * c->nKv + kvh) * L * d, *dV = c->dv + (b * c->nKv + kvh) * L * d;
    memset(dK, 0, sizeof(float) * (size_t)(L * d));
    memset(dV, 0, sizeof(float) * (size_t)(L * d));
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      const float *dO = c->dout + b * S * ldq + h * d, *Q = c->q + b * S * ldq + h * d;
      float *dQ = c->dq + b * S * ldq + h * d;
      attn_probs(c, b, h, P);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)L, (int)d, (int)S, 1.0f, P, (int)L, dO, (int)ldq, 1.0f,
                  dV, (int)d);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)S, (int)L, (int)d, 1.0f, dO, (int)ldq, V, (int)d, 0.0f,
                  dP, (int)L);
      for (int64_t i = 0; i < S; i++) {
        float *pr = P + i * L, *dr = dP + i * L;
        float dot = 0;
        for (int64_t j = 0; j < L; j++) dot += pr[j] * dr[j];
        for (int64_t j = 0; j < L; j++) dr[j] = pr[j] * (dr[j] - dot);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)S, (int)d, (int)L, c->scale, dP, (int)L, K, (int)d,
                  0.0f, dQ, (int)ldq);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)L, (int)d, (int)S, c->scale, dP, (int)L, Q, (int)ldq,
                  1.0f, dK, (int)d);
    }
  }
  free(P);
}

/*
 * attention(q, k, v, mask, dims Int32Array [B, S, L, nH, nKv, d, maskB], scale, out) and
 * attentionGrad(q, k, v, mask, dims, scale, dout, dq, dk, dv). Groups (b, kv head) are split
 * over the configured threads, each running single-threaded sgemm.
 */
static napi_value attention_common(napi_env env, napi_callback_info info, int back) {
  size_t argc = 10;
  napi_value argv[10];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < (size_t)(back ? 10 : 7)) FAIL("attention: too few arguments");
  struct attn_ctx c;
  memset(&c, 0, sizeof(c));
  int64_t dims[MAX_RANK];
  double scale = 1;
  size_t lq, lk, lv, lm, lo, l1 = 0, l2 = 0, l3 = 0;
  float *q, *k, *v, *m, *o, *dq = NULL, *dk = NULL, *dv = NULL;
  if (!get_f32(env, argv[0], &q, &lq) || !get_f32(env, argv[1], &k, &lk) || !get_f32(env, argv[2], &v, &lv) ||
      !get_f32(env, argv[3], &m, &lm) || get_dims(env, argv[4], dims) != 7 || !get_f32(env, argv[6], &o, &lo))
    FAIL("attention expects Float32Array q, k, v, mask, Int32Array dims[7], scale, Float32Array out/dout");
  if (back && (!get_f32(env, argv[7], &dq, &l1) || !get_f32(env, argv[8], &dk, &l2) || !get_f32(env, argv[9], &dv, &l3)))
    FAIL("attentionGrad expects Float32Array dq, dk, dv");
  napi_get_value_double(env, argv[5], &scale);
  c.B = dims[0], c.S = dims[1], c.L = dims[2], c.nH = dims[3], c.nKv = dims[4], c.d = dims[5], c.maskB = dims[6];
  size_t nq = (size_t)(c.B * c.S * c.nH * c.d), nk = (size_t)(c.B * c.nKv * c.L * c.d);
  if (c.B < 0 || c.S < 1 || c.L < 1 || c.nKv < 1 || c.nH % c.nKv || c.d < 1 || (c.maskB != 1 && c.maskB != c.B))
    FAIL("attention: bad dims");
  if (lq < nq || lk < nk || lv < nk || lm < (size_t)(c.maskB * c.S * c.L) || lo < nq ||
      (back && (l1 < nq || l2 < nk || l3 < nk)))
    FAIL("attention: array too short for dims");
  c.q = q, c.k = k, c.v = v, c.mask = m, c.scale = (float)scale;
  if (back) c.dout = o, c.dq = dq, c.dk = dk, c.dv = dv;
  else c.out = o;
  int configured = openblas_get_num_threads();
  openblas_set_num_threads(1);
  parallel_for_threads(c.B * c.nKv, configured, back ? attn_bwd_groups : attn_fwd_groups, &c);
  openblas_set_num_threads(configured);
  return NULL;
}

static napi_value attention(napi_env env, napi_callback_info info) { return attention_common(env, info, 0); }
static napi_value attention_grad(napi_env env, napi_callback_info info) { return attention_common(env, info, 1); }

/*
 * Log-prob head on logits z [rows, cols] (already divided by the temperature):
 * logpStats: stats[r] = (z[r, y] - lse, lse - sum_j p_j z_j), lse[r]; p = softmax(z[r]).
 * logpStatsGrad: dz[r, j] = -p_j (gl + ge (z_j - lse + H)) * inv, plus gl * inv at j = y,
 * with (gl, ge) = dy[r] and H = stats[r, 1]. One pass per row each way (nothing [rows, cols]
 * but the output is written).
 */
struct lp_ctx {
  const float *z, *lse, *stats, *dy;
  const int32_t *y;
  float *out, *lse_out, *dz;
  int64_t cols;
  float inv;
};

HOT static void logp_stats_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct lp_ctx *c = (const struct lp_ctx *)vctx;
  int64_t cols = c->cols;
  for (int64_t r = r0; r < r1; r++) {
    const float *zr = c->z + r * cols;
    float m = row_max(zr, cols);
    /* s = sum e, t = sum e (z - m) with e = exp(z - m), in 8 float lanes (vectorises) */
    float as[8] = {0, 0, 0, 0, 0, 0, 0, 0}, at[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8)
      for (int k = 0; k < 8; k++) {
        float d = zr[j + k] - m, e = fast_expf(d);
        as[k] += e;
        at[k] += e * d;
      }
    for (; j < cols; j++) {
      float d = zr[j] - m, e = fast_expf(d);
      as[0] += e;
      at[0] += e * d;
    }
    double s = 0, t = 0;
    for (int k = 0; k < 8; k++) s += as[k], t += at[k];
    double lse = m + log(s);
    c->lse_out[r] = (float)lse;
    c->out[2 * r] = (float)(zr[c->y[r]] - lse);
    /* H = lse - sum p z = log(s) - t / s */
    c->out[2 * r + 1] = (float)(log(s) - t / s);
  }
}

HOT static void logp_grad_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct lp_ctx *c = (const struct lp_ctx *)vctx;
  int64_t cols = c->cols;
  for (int64_t r = r0; r < r1; r++) {
    const float *zr = c->z + r * cols;
    float *g = c->dz + r * cols;
    float gl = c->dy[2 * r], ge = c->dy[2 * r + 1], lse = c->lse[r], h = c->stats[2 * r + 1], inv = c->inv;
    float base = gl + ge * (h - lse);
    for (int64_t j = 0; j < cols; j++) {
      float p = fast_expf(zr[j] - lse);
      g[j] = -p * (base + ge * zr[j]) * inv;
    }
    g[c->y[r]] += gl * inv;
  }
}

/* logpStats(z, rows, cols, targets, stats [rows, 2], lse [rows]); returns -1 or the first bad row */
static napi_value logp_stats(napi_env env, napi_callback_info info) {
  ARGS(6);
  float *z, *st, *lse;
  int32_t *y;
  size_t lz, ly, ls, ll;
  int64_t rows = get_int(env, argv[1]), cols = get_int(env, argv[2]);
  if (!get_f32(env, argv[0], &z, &lz) || !get_i32(env, argv[3], &y, &ly) || !get_f32(env, argv[4], &st, &ls) ||
      !get_f32(env, argv[5], &lse, &ll))
    FAIL("logpStats expects Float32Array z, Int32Array targets, Float32Array stats, lse");
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lz || (size_t)rows > ly || (size_t)(2 * rows) > ls || (size_t)rows > ll)
    FAIL("logpStats: array too short for [rows, cols]");
  int64_t bad = -1;
  for (int64_t r = 0; r < rows && bad < 0; r++) if (y[r] < 0 || y[r] >= cols) bad = r;
  if (bad < 0) {
    struct lp_ctx c = {z, NULL, NULL, NULL, y, st, lse, NULL, cols, 1.0f};
    parallel_for(rows, GRAIN / cols + 1, logp_stats_rows, &c);
  }
  napi_value out;
  CHECK(napi_create_int64(env, bad, &out));
  return out;
}

/* logpStatsGrad(z, rows, cols, targets, lse, stats, dy [rows, 2], inv, dz) */
static napi_value logp_stats_grad(napi_env env, napi_callback_info info) {
  ARGS(9);
  float *z, *lse, *st, *dy, *dz;
  int32_t *y;
  size_t lz, ly, ll, ls, ld, lo;
  int64_t rows = get_int(env, argv[1]), cols = get_int(env, argv[2]);
  double inv = 1;
  napi_get_value_double(env, argv[7], &inv);
  if (!get_f32(env, argv[0], &z, &lz) || !get_i32(env, argv[3], &y, &ly) || !get_f32(env, argv[4], &lse, &ll) ||
      !get_f32(env, argv[5], &st, &ls) || !get_f32(env, argv[6], &dy, &ld) || !get_f32(env, argv[8], &dz, &lo))
    FAIL("logpStatsGrad expects Float32Array z, Int32Array targets, Float32Array lse, stats, dy, dz");
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lz || (size_t)rows > ly || (size_t)rows > ll ||
      (size_t)(2 * rows) > ls || (size_t)(2 * rows) > ld || (size_t)(rows * cols) > lo)
    FAIL("logpStatsGrad: array too short for [rows, cols]");
  for (int64_t r = 0; r < rows; r++) if (y[r] < 0 || y[r] >= cols) FAIL("logpStatsGrad: target out of range");
  struct lp_ctx c = {z, lse, st, dy, y, NULL, NULL, dz, cols, (float)inv};
  parallel_for(rows, GRAIN / cols + 1, logp_grad_rows, &c);
  return NULL;
}

/*
 * adamw(p, g, m, v, hp Float32Array [lr, b1, b2, eps, wd, c1, c2], p', m', v'): one AdamW step
 * (Loshchilov & Hutter 2019) elementwise: m' = b1 m + (1-b1) g, v' = b2 v + (1-b2) g^2,
 * p' = p (1 - lr wd) - lr (m'/c1) / (sqrt(v'/c2) + eps), c1/c2 the bias corrections.
 */
struct adam_ctx {
  const float *p, *g, *m, *v;
  float *po, *mo, *vo;
  float lr, b1, b2, eps, wd, c1, c2;
};

HOT static void adamw_range(void *vctx, int64_t i0, int64_t i1) {
  const struct adam_ctx *c = (const struct adam_ctx *)vctx;
  float decay = 1.0f - c->lr * c->wd, ic1 = 1.0f / c->c1, ic2 = 1.0f / c->c2;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i];
    float m = c->b1 * c->m[i] + (1.0f - c->b1) * g;
    float v = c->b2 * c->v[i] + (1.0f - c->b2) * g * g;
    c->mo[i] = m;
    c->vo[i] = v;
    c->po[i] = c->p[i] * decay - c->lr * (m * ic1) / (sqrtf(v * ic2) + c->eps);
  }
}

static napi_value adamw(napi_env env, napi_callback_info info) {
  ARGS(8);
  float *a[8];
  size_t len[8];
  for (int i = 0; i < 8; i++)
    if (!get_f32(env, argv[i], &a[i], &len[i])) FAIL("adamw expects 8 Float32Arrays (p, g, m, v, hp, p', m', v')");
  size_t n = len[0];
  if (len[1] < n || len[2] < n || len[3] < n || len[4] < 7 || len[5] < n || len[6] < n || len[7] < n)
    FAIL("adamw: arrays of different lengths");
  float *hp = a[4];
  struct adam_ctx c = {a[0], a[1], a[2], a[3], a[5], a[6], a[7], hp[0], hp[1], hp[2], hp[3], hp[4], hp[5], hp[6]};
  parallel_for((int64_t)n, GRAIN, adamw_range, &c);
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"gemm", NULL, gemm, NULL, NULL, NULL, napi_default, NULL},
      {"setThreads", NULL, set_threads, NULL, NULL, NULL, napi_default, NULL},
      {"getThreads", NULL, get_threads, NULL, NULL, NULL, napi_default, NULL},
      {"binary", NULL, binary, NULL, NULL, NULL, napi_default, NULL},
      {"compare", NULL, compare, NULL, NULL, NULL, napi_default, NULL},
      {"unary", NULL, unary, NULL, NULL, NULL, napi_default, NULL},
      {"softmax", NULL, softmax, NULL, NULL, NULL, napi_default, NULL},
      {"reduce", NULL, reduce, NULL, NULL, NULL, napi_default, NULL},
      {"transpose", NULL, transpose, NULL, NULL, NULL, napi_default, NULL},
      {"gather", NULL, gather, NULL, NULL, NULL, napi_default, NULL},
      {"stridedCopy", NULL, strided_copy, NULL, NULL, NULL, napi_default, NULL},
      {"segmentSum", NULL, segment_sum, NULL, NULL, NULL, napi_default, NULL},
      {"xentForward", NULL, xent_forward, NULL, NULL, NULL, napi_default, NULL},
      {"xentBackward", NULL, xent_backward, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNorm", NULL, rms_norm, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNormGrad", NULL, rms_norm_grad, NULL, NULL, NULL, napi_default, NULL},
      {"swiglu", NULL, swiglu, NULL, NULL, NULL, napi_default, NULL},
      {"swigluGrad", NULL, swiglu_grad, NULL, NULL, NULL, napi_default, NULL},
      {"rotary", NULL, rotary, NULL, NULL, NULL, napi_default, NULL},
      {"attention", NULL, attention, NULL, NULL, NULL, napi_default, NULL},
      {"attentionGrad", NULL, attention_grad, NULL, NULL, NULL, napi_default, NULL},
      {"logpStats", NULL, logp_stats, NULL, NULL, NULL, napi_default, NULL},
      {"logpStatsGrad", NULL, logp_stats_grad, NULL, NULL, NULL, napi_default, NULL},
      {"adamw", NULL, adamw, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_value abi;
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok ||
      napi_create_int32(env, RL2_KERNELS_ABI, &abi) != napi_ok ||
      napi_set_named_property(env, exports, "abi", abi) != napi_ok)
    return NULL;
  return exports;
}

NAPI_MODULE(rl2_kernels, init)
