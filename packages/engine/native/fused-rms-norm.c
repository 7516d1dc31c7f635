/* RMSNorm forward, and its backward giving dx and dw in one call. */
#include "kernels.h"

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

/* rmsNorm(x [rows, h], w [h], rows, h, eps, y [rows, h]) */
KERNEL(rms_norm) {
  float *x, *w, *y;
  size_t lx, lw, ly;
  int64_t rows, h;
  double eps = 0;
  if (!read_args(env, info, "rmsNorm expects Float32Array x, w, y", "ffnndf", &x, &lx, &w, &lw, &rows, &h, &eps, &y, &ly))
    return NULL;
  if (rows < 0 || h < 1 || (size_t)(rows * h) > lx || (size_t)h > lw || (size_t)(rows * h) > ly)
    FAIL("rmsNorm: array too short for [rows, h]");
  struct norm_ctx c = {x, w, NULL, y, NULL, h, (float)eps};
  parallel_for(rows, GRAIN / h + 1, rms_norm_rows, &c);
  return NULL;
}

/* rmsNormGrad(x, w, dy, rows, h, eps, dx [rows, h], dw [h]) */
KERNEL(rms_norm_grad) {
  float *x, *w, *dy, *dx, *dw;
  size_t lx, lw, ld, ldx, ldw;
  int64_t rows, h;
  double eps = 0;
  if (!read_args(env, info, "rmsNormGrad expects Float32Array x, w, dy, dx, dw", "fffnndff", &x, &lx, &w, &lw, &dy, &ld,
                 &rows, &h, &eps, &dx, &ldx, &dw, &ldw))
    return NULL;
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
