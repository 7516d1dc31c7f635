/* The log-prob head: log p(target) and entropy per row of logits, and their gradient, one pass each. */
#include "kernels.h"

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
KERNEL(logp_stats) {
  float *z, *st, *lse;
  int32_t *y;
  size_t lz, ly, ls, ll;
  int64_t rows, cols;
  if (!read_args(env, info, "logpStats expects Float32Array z, Int32Array targets, Float32Array stats, lse", "fnniff", &z,
                 &lz, &rows, &cols, &y, &ly, &st, &ls, &lse, &ll))
    return NULL;
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lz || (size_t)rows > ly || (size_t)(2 * rows) > ls || (size_t)rows > ll)
    FAIL("logpStats: array too short for [rows, cols]");
  int64_t bad = -1;
  for (int64_t r = 0; r < rows && bad < 0; r++) if (y[r] < 0 || y[r] >= cols) bad = r;
  if (bad < 0) {
    struct lp_ctx c = {z, NULL, NULL, NULL, y, st, lse, NULL, cols, 1.0f};
    parallel_for(rows, GRAIN / cols + 1, logp_stats_rows, &c);
  }
  return int64_result(env, bad);
}

/* logpStatsGrad(z, rows, cols, targets, lse, stats, dy [rows, 2], inv, dz) */
KERNEL(logp_stats_grad) {
  float *z, *lse, *st, *dy, *dz;
  int32_t *y;
  size_t lz, ly, ll, ls, ld, lo;
  int64_t rows, cols;
  double inv = 1;
  if (!read_args(env, info, "logpStatsGrad expects Float32Array z, Int32Array targets, Float32Array lse, stats, dy, dz",
                 "fnnifffdf", &z, &lz, &rows, &cols, &y, &ly, &lse, &ll, &st, &ls, &dy, &ld, &inv, &dz, &lo))
    return NULL;
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lz || (size_t)rows > ly || (size_t)rows > ll ||
      (size_t)(2 * rows) > ls || (size_t)(2 * rows) > ld || (size_t)(rows * cols) > lo)
    FAIL("logpStatsGrad: array too short for [rows, cols]");
  for (int64_t r = 0; r < rows; r++) if (y[r] < 0 || y[r] >= cols) FAIL("logpStatsGrad: target out of range");
  struct lp_ctx c = {z, lse, st, dy, y, NULL, NULL, dz, cols, (float)inv};
  parallel_for(rows, GRAIN / cols + 1, logp_grad_rows, &c);
  return NULL;
}
