/* Row helpers (shared, see kernels.h), softmax over rows, and sum/mean/max/min over an axis run. */
#include "kernels.h"

/* max of a row, 8 lanes wide so the loop vectorises (NaN-free rows; NaN propagates via exp). */
HOT float row_max(const float *row, int64_t cols) {
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
HOT float row_sum_exp(const float *row, int64_t cols, float m) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; k++) acc[k] += fast_expf(row[c + k] - m);
  for (; c < cols; c++) acc[0] += fast_expf(row[c] - m);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* sum of a row in 8 float lanes (vectorises; order differs from a serial sum by < 1e-6 relative). */
HOT float row_sum(const float *row, int64_t cols) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; k++) acc[k] += row[c + k];
  for (; c < cols; c++) acc[0] += row[c];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* out[c] = scale * exp(row[c] - m). */
HOT void exp_shifted(const float *row, int64_t cols, float m, float scale, float *out) {
  for (int64_t c = 0; c < cols; c++) out[c] = scale * fast_expf(row[c] - m);
}

/* log(sum(exp(row))) of one row, stable (max shifted). */
double row_lse(const float *row, int64_t cols) {
  float m = row_max(row, cols);
  if (m == -INFINITY) return -INFINITY;
  return m + log((double)row_sum_exp(row, cols, m));
}

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
KERNEL(softmax) {
  float *x, *o;
  size_t lx, lo;
  int64_t rows, cols;
  if (!read_args(env, info, "softmax expects Float32Array x and out", "fnnf", &x, &lx, &rows, &cols, &o, &lo)) return NULL;
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
KERNEL(reduce) {
  int64_t op64, outer, r, inner;
  float *x, *o;
  size_t lx, lo;
  if (!read_args(env, info, "reduce expects Float32Array x and out", "nfnnnf", &op64, &x, &lx, &outer, &r, &inner, &o, &lo))
    return NULL;
  int op = (int)op64;
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

void online_softmax_row(float *row, int64_t cols, float *m, float *l, float *acc, int64_t d) {
  float mt = row_max(row, cols), mn = mt > *m ? mt : *m;
  if (mn == -INFINITY) {
    for (int64_t j = 0; j < cols; j++) row[j] = 0;
    return;
  }
  float corr = *m == -INFINITY ? 0.0f : fast_expf(*m - mn);
  exp_shifted(row, cols, mn, 1.0f, row);
  *l = *l * corr + row_sum(row, cols);
  *m = mn;
  if (corr != 1.0f)
    for (int64_t t = 0; t < d; t++) acc[t] *= corr;
}

/* sumSquares(x): sum of x^2 in double precision (a gradient's squared norm), over the threads. */
struct sumsq_ctx {
  const float *x;
  double total;
  pthread_mutex_t lock;
};

HOT static void sumsq_range(void *vctx, int64_t i0, int64_t i1) {
  struct sumsq_ctx *c = (struct sumsq_ctx *)vctx;
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = i0;
  /* 8 double lanes (vectorises; the sum is memory-bound either way) */
  for (; i + 8 <= i1; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += (double)c->x[i + k] * (double)c->x[i + k];
  for (; i < i1; i++) acc[0] += (double)c->x[i] * c->x[i];
  double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  pthread_mutex_lock(&c->lock);
  c->total += s;
  pthread_mutex_unlock(&c->lock);
}

KERNEL(sum_squares) {
  float *x;
  size_t n;
  if (!read_args(env, info, "sumSquares expects a Float32Array", "f", &x, &n)) return NULL;
  struct sumsq_ctx c = {x, 0, PTHREAD_MUTEX_INITIALIZER};
  parallel_for((int64_t)n, GRAIN * 4, sumsq_range, &c);
  napi_value out;
  CHECK(napi_create_double(env, c.total, &out));
  return out;
}
