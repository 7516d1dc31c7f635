/* One decoder layer's decode step (one new token per row) as a single call, over a KV cache
   laid out for appends. */
#include "kernels.h"

/*
 * decodeLayer(x, weights, dims, eps, cos, sin, kCache, vCache, padLeft)
 *   x        [B, H], the residual stream, updated in place
 *   weights  JS array of DECODE_SLOTS Float32Arrays (null where the model has none), see enum
 *   dims     Int32Array [B, H, nH, nKv, d, F, cap, len]
 *   cos/sin  [B, d] RoPE tables of each row's position (rotate-half layout)
 *   kCache/vCache [B, nKv, cap, d]: columns padLeft[b] .. len-1 hold row b's earlier keys/values
 *            (after RoPE); this step writes column len and attends to padLeft[b] .. len.
 * The step is HF's LlamaDecoderLayer / Qwen2 / Qwen3 on one token:
 *   h = rms(x) ; q, k, v = h Wq^T (+b), h Wk^T (+b), h Wv^T (+b) ; q, k = rms per head (Qwen3)
 *   q, k = rope(q), rope(k) ; cache[len] = k, v ; a = softmax(q K^T / sqrt(d)) V per head
 *   x += a Wo^T (+b) ; h = rms(x) ; x += (silu(h Wg^T) * (h Wu^T)) Wd^T (each + bias if given)
 * Projections are cblas_sgemm, threaded only when a product is large (a few rows times a small
 * matrix finishes before threads pay off, and idle OpenBLAS threads spin on the CPU); attention
 * is split over (row, kv head) groups on plain loops when the cache is long.
 */
/* Multiply-adds per product (or attention call) below which one thread does it. */
#define DECODE_THREAD_WORK (1 << 24)
enum {
  W_IN_NORM, W_Q, W_K, W_V, B_Q, B_K, B_V, W_Q_NORM, W_K_NORM, W_O, B_O, W_POST_NORM, W_GATE, W_UP, W_DOWN,
  B_GATE, B_UP, B_DOWN, DECODE_SLOTS
};

struct decode_attn {
  const float *q; /* [B, nH*d] after norm + rope */
  const float *kc, *vc;
  const int32_t *pad;
  float *out; /* [B, nH*d] */
  int64_t nH, nKv, d, cap, len;
  float scale;
};

HOT static void rms_rows(const float *x, const float *w, int64_t rows, int64_t h, float eps, float *y) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * h;
    float *yr = y + r * h;
    float ss = 0;
    for (int64_t k = 0; k < h; k++) ss += xr[k] * xr[k];
    float inv = 1.0f / sqrtf(ss / (float)h + eps);
    for (int64_t k = 0; k < h; k++) yr[k] = xr[k] * inv * w[k];
  }
}

/* y [rows, out] = x [rows, in] W^T (+ bias), beta 1 into y when `accumulate` */
static void linear_rows(const float *x, const float *w, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
                        int accumulate) {
  float beta = 0.0f;
  if (bias) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < out; j++) y[r * out + j] = (accumulate ? y[r * out + j] : 0.0f) + bias[j];
    beta = 1.0f;
  } else if (accumulate) {
    beta = 1.0f;
  }
  int configured = openblas_get_num_threads(), small = rows * in * out < DECODE_THREAD_WORK;
  if (small && configured > 1) openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f, x, (int)in, w, (int)in, beta, y,
              (int)out);
  if (small && configured > 1) openblas_set_num_threads(configured);
}

/* x [rows, heads, d] in place: rotate-half RoPE with cos/sin [rows, d] */
HOT static void rope_rows(float *x, const float *cs, const float *sn, int64_t rows, int64_t heads, int64_t d) {
  int64_t half = d / 2;
  for (int64_t t = 0; t < rows; t++) {
    const float *c = cs + t * d, *s = sn + t * d;
    for (int64_t hh = 0; hh < heads; hh++) {
      float *r = x + (t * heads + hh) * d;
      for (int64_t j = 0; j < half; j++) {
        float a = r[j], b = r[j + half];
        r[j] = a * c[j] - b * s[j];
        r[j + half] = b * c[j + half] + a * s[j + half];
      }
    }
  }
}

HOT static void decode_attn_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct decode_attn *c = (const struct decode_attn *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, ldq = c->nH * d;
  float *p = malloc(sizeof(float) * (size_t)(c->len + 1));
  if (!p) return;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    int64_t start = c->pad[b], n = c->len + 1 - start;
    const float *K = c->kc + ((b * c->nKv + kvh) * c->cap + start) * d;
    const float *V = c->vc + ((b * c->nKv + kvh) * c->cap + start) * d;
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      const float *q = c->q + b * ldq + h * d;
      float *o = c->out + b * ldq + h * d;
      for (int64_t j = 0; j < n; j++) {
        const float *kr = K + j * d;
        float s = 0;
        for (int64_t t = 0; t < d; t++) s += q[t] * kr[t];
        p[j] = s * c->scale;
      }
      float m = row_max(p, n);
      exp_shifted(p, n, m, 1.0f, p);
      float inv = 1.0f / row_sum(p, n);
      for (int64_t t = 0; t < d; t++) o[t] = 0;
      for (int64_t j = 0; j < n; j++) {
        const float *vr = V + j * d;
        float w = p[j] * inv;
        for (int64_t t = 0; t < d; t++) o[t] += w * vr[t];
      }
    }
  }
  free(p);
}

HOT static void silu_mul(float *g, const float *u, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float x = g[i];
    g[i] = x / (1.0f + fast_expf(-x)) * u[i];
  }
}

/* Reads `slots` entries of the JS array `arr` as Float32Arrays (NULL for null/undefined). */
static int read_weights(napi_env env, napi_value arr, float **w, size_t *len, int slots) {
  uint32_t n = 0;
  if (napi_get_array_length(env, arr, &n) != napi_ok || n < (uint32_t)slots) return 0;
  for (int i = 0; i < slots; i++) {
    napi_value v;
    napi_valuetype t;
    w[i] = NULL;
    len[i] = 0;
    if (napi_get_element(env, arr, (uint32_t)i, &v) != napi_ok || napi_typeof(env, v, &t) != napi_ok) return 0;
    if (t == napi_null || t == napi_undefined) continue;
    napi_typedarray_type type;
    void *ptr;
    if (napi_get_typedarray_info(env, v, &type, &len[i], &ptr, NULL, NULL) != napi_ok || type != napi_float32_array) return 0;
    w[i] = (float *)ptr;
  }
  return 1;
}

KERNEL(decode_layer) {
  size_t argc = 9;
  napi_value argv[9];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 9) FAIL("decodeLayer expects x, weights[], dims, eps, cos, sin, kCache, vCache, padLeft");
  float *W[DECODE_SLOTS];
  size_t WL[DECODE_SLOTS];
  if (!read_weights(env, argv[1], W, WL, DECODE_SLOTS)) FAIL("decodeLayer: weights must be an array of Float32Array or null");
  float *x, *cs, *sn, *kc, *vc;
  int32_t *pad;
  size_t lx, lcs, lsn, lkc, lvc, lpad;
  napi_typedarray_type ty;
  int64_t dims[8];
  double eps = 1e-6;
#define TA(i, ptr, len, want)                                                                                   \
  do {                                                                                                          \
    void *p_;                                                                                                   \
    if (napi_get_typedarray_info(env, argv[i], &ty, &len, &p_, NULL, NULL) != napi_ok || ty != want)            \
      FAIL("decodeLayer expects Float32Array x, cos, sin, kCache, vCache and Int32Array dims, padLeft");        \
    ptr = p_;                                                                                                   \
  } while (0)
  int32_t *dv;
  size_t ldims;
  TA(0, x, lx, napi_float32_array);
  TA(2, dv, ldims, napi_int32_array);
  TA(4, cs, lcs, napi_float32_array);
  TA(5, sn, lsn, napi_float32_array);
  TA(6, kc, lkc, napi_float32_array);
  TA(7, vc, lvc, napi_float32_array);
  TA(8, pad, lpad, napi_int32_array);
#undef TA
  if (napi_get_value_double(env, argv[3], &eps) != napi_ok) FAIL("decodeLayer: eps must be a number");
  if (ldims < 8) FAIL("decodeLayer: dims must be [B, H, nH, nKv, d, F, cap, len]");
  for (int i = 0; i < 8; i++) dims[i] = dv[i];
  int64_t B = dims[0], H = dims[1], nH = dims[2], nKv = dims[3], d = dims[4], F = dims[5], cap = dims[6], len = dims[7];
  if (B < 1 || H < 1 || nH < 1 || nKv < 1 || nH % nKv || d < 2 || d % 2 || F < 1 || len < 0 || cap <= len)
    FAIL("decodeLayer: bad dims (need nH % nKv == 0, even d, len < cap)");
  int64_t qw = nH * d, kw = nKv * d;
  size_t need[DECODE_SLOTS] = {(size_t)H, (size_t)(qw * H), (size_t)(kw * H), (size_t)(kw * H), (size_t)qw, (size_t)kw,
                               (size_t)kw, (size_t)d, (size_t)d, (size_t)(H * qw), (size_t)H, (size_t)H, (size_t)(F * H),
                               (size_t)(F * H), (size_t)(H * F), (size_t)F, (size_t)F, (size_t)H};
  static const int required[] = {W_IN_NORM, W_Q, W_K, W_V, W_O, W_POST_NORM, W_GATE, W_UP, W_DOWN};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
    if (!W[required[i]]) FAIL("decodeLayer: a required weight is null");
  for (int i = 0; i < DECODE_SLOTS; i++)
    if (W[i] && WL[i] < need[i]) FAIL("decodeLayer: a weight is shorter than dims need");
  if (lx < (size_t)(B * H) || lcs < (size_t)(B * d) || lsn < (size_t)(B * d) || lkc < (size_t)(B * kw * cap) ||
      lvc < (size_t)(B * kw * cap) || lpad < (size_t)B)
    FAIL("decodeLayer: array too short for dims");
  for (int64_t b = 0; b < B; b++)
    if (pad[b] < 0 || pad[b] > len) FAIL("decodeLayer: padLeft must be in [0, len]");

  float *h = malloc(sizeof(float) * (size_t)(B * (H + 2 * qw + 2 * kw + 2 * F)));
  if (!h) FAIL("decodeLayer: out of memory");
  float *q = h + B * H, *k = q + B * qw, *v = k + B * kw, *a = v + B * kw, *g = a + B * qw, *u = g + B * F;
  float e = (float)eps;

  rms_rows(x, W[W_IN_NORM], B, H, e, h);
  linear_rows(h, W[W_Q], W[B_Q], B, H, qw, q, 0);
  linear_rows(h, W[W_K], W[B_K], B, H, kw, k, 0);
  linear_rows(h, W[W_V], W[B_V], B, H, kw, v, 0);
  if (W[W_Q_NORM]) rms_rows(q, W[W_Q_NORM], B * nH, d, e, q);
  if (W[W_K_NORM]) rms_rows(k, W[W_K_NORM], B * nKv, d, e, k);
  rope_rows(q, cs, sn, B, nH, d);
  rope_rows(k, cs, sn, B, nKv, d);
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = 0; j < nKv; j++) {
      size_t at = (size_t)(((b * nKv + j) * cap + len) * d);
      memcpy(kc + at, k + (b * nKv + j) * d, sizeof(float) * (size_t)d);
      memcpy(vc + at, v + (b * nKv + j) * d, sizeof(float) * (size_t)d);
    }
  struct decode_attn c = {q, kc, vc, pad, a, nH, nKv, d, cap, len, 1.0f / sqrtf((float)d)};
  int64_t work = B * nH * (len + 1) * d;
  if (work >= DECODE_THREAD_WORK / 4) parallel_for_threads(B * nKv, openblas_get_num_threads(), decode_attn_groups, &c);
  else decode_attn_groups(&c, 0, B * nKv);
  linear_rows(a, W[W_O], W[B_O], B, qw, H, x, 1);

  rms_rows(x, W[W_POST_NORM], B, H, e, h);
  linear_rows(h, W[W_GATE], W[B_GATE], B, H, F, g, 0);
  linear_rows(h, W[W_UP], W[B_UP], B, H, F, u, 0);
  silu_mul(g, u, B * F);
  linear_rows(g, W[W_DOWN], W[B_DOWN], B, F, H, x, 1);
  free(h);
  return NULL;
}
