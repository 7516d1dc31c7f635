/* Broadcasting binary ops and comparisons, and unary ops, split over threads when large. */
#include "kernels.h"

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

/*
 * binary(op, a, aStrides, b, bStrides, out, outShape): out[idx] = a[idx·aStrides] op b[idx·bStrides]
 * over the broadcast output shape; a stride of 0 broadcasts that dimension.
 */
KERNEL(binary) {
  int64_t op64;
  float *a, *b, *o;
  size_t la, lb, lo;
  int64_t as[MAX_RANK], bs[MAX_RANK], shape[MAX_RANK];
  int ra, rb, r;
  if (!read_args(env, info, "binary expects Float32Array a, b, out", "nfsfsfs", &op64, &a, &la, as, &ra, &b, &lb, bs, &rb,
                 &o, &lo, shape, &r))
    return NULL;
  int op = (int)op64;
  if (r < 1 || ra != r || rb != r) FAIL("binary: strides and shape must be Int32Array of the same rank (1..8)");
  int64_t amax, bmax;
  int64_t total = broadcast_extent(shape, as, bs, r, &amax, &bmax);
  if ((size_t)total > lo || (total > 0 && ((size_t)amax >= la || (size_t)bmax >= lb)))
    FAIL("binary: array too short for the given shape");
  if (total == 0) return NULL;
  broadcast_run(op, 0, a, as, b, bs, o, shape, r, total);
  return NULL;
}

/* compare(op, a, aStrides, b, bStrides, out Uint8Array, outShape): like binary, out is 0/1 (tfjs bool). */
KERNEL(compare) {
  int64_t op64;
  float *a, *b;
  uint8_t *o;
  size_t la, lb, lo;
  int64_t as[MAX_RANK], bs[MAX_RANK], shape[MAX_RANK];
  int ra, rb, r;
  if (!read_args(env, info, "compare expects Float32Array a, b and a Uint8Array out", "nfsfsus", &op64, &a, &la, as, &ra,
                 &b, &lb, bs, &rb, &o, &lo, shape, &r))
    return NULL;
  int op = (int)op64;
  if (r < 1 || ra != r || rb != r) FAIL("compare: strides and shape must be Int32Array of the same rank (1..8)");
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
KERNEL(unary) {
  int64_t op64;
  float *x, *o;
  size_t lx, lo;
  if (!read_args(env, info, "unary expects Float32Array x and an out at least as long", "nff", &op64, &x, &lx, &o, &lo))
    return NULL;
  int op = (int)op64;
  if (lo < lx) FAIL("unary expects Float32Array x and an out at least as long");
  if (op < U_EXP || op > U_RECIP) FAIL("unary: unknown op code");
  struct unary_ctx c = {op, x, o};
  parallel_for((int64_t)lx, GRAIN, unary_range, &c);
  return NULL;
}
