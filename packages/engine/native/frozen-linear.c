/* Products with a frozen 16-bit weight W [out, in] (bfloat16 or float16 bits, e.g. a LoRA base kept
 * as stored): the forward y [rows, out] = x [rows, in] W^T and the input gradient dx [rows, in] =
 * dy [rows, out] W, no weight gradient. W is widened a tile of rows at a time into a float32
 * buffer (a few MiB, never the whole matrix) and each tile goes through OpenBLAS sgemm; the
 * float32 values of a bf16/f16 W are exact, so the products are sgemm's on those values. A few
 * rows of the forward take decode-linear.c's one-pass skinny product instead. */
#include "kernels.h"

/* float32 elements of one widened tile of W (4 MiB): at least 16 rows of W whatever `in` is */
#define TILE_ELEMS (1 << 20)

struct widen_ctx {
  const uint16_t *w;
  float *out;
  int dtype;
};

static void widen_range(void *vctx, int64_t i0, int64_t i1) {
  struct widen_ctx *c = (struct widen_ctx *)vctx;
  if (c->dtype == RL2_WT_BF16) {
    uint32_t *o = (uint32_t *)(void *)c->out;
    for (int64_t i = i0; i < i1; i++) o[i] = (uint32_t)c->w[i] << 16;
  } else weights_to_float(c->w + i0, c->dtype, i1 - i0, c->out + i0);
}

/* rows j0 .. j0+n of W as float32 into buf [n, in], over the pool */
static void widen_rows(const uint16_t *w, int dtype, int64_t j0, int64_t n, int64_t in, float *buf) {
  struct widen_ctx c = {w + j0 * in, buf, dtype};
  parallel_for(n * in, 1 << 16, widen_range, &c);
}

void frozen_product(const float *x, const uint16_t *w, int dtype, int64_t rows, int64_t in, int64_t out, float *y,
                   int transpose, float *buf) {
  int64_t tile = TILE_ELEMS / in < 16 ? 16 : TILE_ELEMS / in;
  if (tile > out) tile = out;
  for (int64_t j0 = 0; j0 < out; j0 += tile) {
    int64_t n = out - j0 < tile ? out - j0 : tile;
    widen_rows(w, dtype, j0, n, in, buf);
    if (!transpose) /* y[:, j0:j0+n] = x buf^T */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)n, (int)in, 1.0f, x, (int)in, buf, (int)in, 0.0f,
                  y + j0, (int)out);
    else /* y += x[:, j0:j0+n] buf (x is dy [rows, out], y is dx [rows, in]) */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)in, (int)n, 1.0f, x + j0, (int)out, buf, (int)in,
                  j0 == 0 ? 0.0f : 1.0f, y, (int)in);
  }
}

/* frozenLinear(x, w (Uint16Array of bf16 / f16 bits), weightDtype (1, 2), rows, in, out, y, transpose):
   transpose 0: y [rows, out] = x [rows, in] W^T; transpose 1: y [rows, in] = x [rows, out] W (an input gradient). */
KERNEL(frozen_linear) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 8) FAIL("frozenLinear expects x, w, weightDtype, rows, in, out, y, transpose");
  int32_t dtype, transpose;
  int64_t rows, in, out;
  if (napi_get_value_int32(env, argv[2], &dtype) != napi_ok || (dtype != RL2_WT_BF16 && dtype != RL2_WT_F16))
    FAIL("frozenLinear: weightDtype must be 1 (bfloat16) or 2 (float16)");
  if (napi_get_value_int64(env, argv[3], &rows) != napi_ok || napi_get_value_int64(env, argv[4], &in) != napi_ok ||
      napi_get_value_int64(env, argv[5], &out) != napi_ok || napi_get_value_int32(env, argv[7], &transpose) != napi_ok ||
      rows < 0 || in < 1 || out < 1)
    FAIL("frozenLinear: rows, in, out, transpose must be integers (rows >= 0, in and out >= 1)");
  napi_typedarray_type tx, tw, ty;
  size_t lx, lw, ly;
  void *x, *w, *y;
  if (napi_get_typedarray_info(env, argv[0], &tx, &lx, &x, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[1], &tw, &lw, &w, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[6], &ty, &ly, &y, NULL, NULL) != napi_ok || tx != napi_float32_array ||
      ty != napi_float32_array || tw != napi_uint16_array)
    FAIL("frozenLinear expects Float32Array x, y and a Uint16Array w");
  int64_t xcols = transpose ? out : in, ycols = transpose ? in : out;
  if (lx < (size_t)(rows * xcols) || lw < (size_t)(out * in) || ly < (size_t)(rows * ycols))
    FAIL("frozenLinear: array too short for dims");
  if (rows == 0) return NULL;
  if (!transpose && rows <= 64) {
    skinny_linear(x, w, dtype, NULL, rows, in, out, y, 0, openblas_get_num_threads());
    return NULL;
  }
  int64_t tile = TILE_ELEMS / in < 16 ? 16 : TILE_ELEMS / in;
  float *buf = malloc(sizeof(float) * (size_t)((tile < out ? tile : out) * in));
  if (!buf) FAIL("frozenLinear: out of memory for a widened tile of W");
  frozen_product(x, w, dtype, rows, in, out, y, transpose, buf);
  free(buf);
  return NULL;
}
