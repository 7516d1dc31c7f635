/* One decoder layer over S new tokens per row (S = 1: a decode step; S = the prompt length: a
   prefill) as a single call, over a KV cache laid out for appends. */
#include "kernels.h"

/*
 * decodeLayer(x, weights, dims, eps, cos, sin, kCache, vCache, padLeft(, weightDtype))
 *   x        [B, S, H], the residual stream, updated in place
 *   weights  JS array of DECODE_SLOTS Float32Arrays (null where the model has none), see enum;
 *            with weightDtype RL2_WT_BF16 / RL2_WT_F16 the seven matrices are Uint16Arrays of
 *            those bits (norms and biases stay Float32Arrays)
 *   dims     Int32Array [B, H, nH, nKv, d, F, cap, len(, S)] (S 1 when absent)
 *   cos/sin  [B, S, d] RoPE tables of each new token's position (rotate-half layout)
 *   kCache/vCache [B, nKv, cap, d]: columns padLeft[b] .. len-1 hold row b's earlier keys/values
 *            (after RoPE); this call writes columns len .. len+S-1, and new token s of row b
 *            attends to columns padLeft[b] .. len+s (none, output 0, when len+s < padLeft[b]:
 *            a left-pad position of a prefill).
 * The call is HF's LlamaDecoderLayer / Qwen2 / Qwen3 on those tokens:
 *   h = rms(x) ; q, k, v = h Wq^T (+b), h Wk^T (+b), h Wv^T (+b) ; q, k = rms per head (Qwen3)
 *   q, k = rope(q), rope(k) ; cache[len + s] = k, v ; a = softmax(q K^T / sqrt(d)) V per head
 *   x += a Wo^T (+b) ; h = rms(x) ; x += (silu(h Wg^T) * (h Wu^T)) Wd^T (each + bias if given)
 * Projections of at most SKINNY_ROWS tokens (a decode step) are decode-linear.c's skinny
 * products on every thread, one pass over each weight; larger ones are cblas_sgemm over chunks
 * of at most DECODE_CHUNK tokens (scratch stays small for long prompts; 16-bit weights are
 * widened to a float32 copy first), threaded only when a product is large. Attention is
 * split over (row, kv head) groups: plain loops for one token, for S > 1 query and key tiles
 * with an online softmax (FlashAttention, Dao et al. 2022, https://arxiv.org/abs/2205.14135),
 * so no S x S block exists. It writes its output over q (each tile reads only its own queries).
 */
/* Multiply-adds per product (or attention call) below which one thread does it. */
#define DECODE_THREAD_WORK (1 << 24)
enum {
  W_IN_NORM, W_Q, W_K, W_V, B_Q, B_K, B_V, W_Q_NORM, W_K_NORM, W_O, B_O, W_POST_NORM, W_GATE, W_UP, W_DOWN,
  B_GATE, B_UP, B_DOWN, DECODE_SLOTS
};

/* Most tokens per call that take the skinny products. */
#define SKINNY_ROWS 64

/* Tokens per projection chunk: the chunk's scratch is DECODE_CHUNK x (H + 2 nKv d + 2 F) floats. */
#define DECODE_CHUNK 256
/* Query and key tile of the S > 1 attention. */
#define DECODE_TILE 64

struct decode_attn {
  float *q; /* [B, S, nH*d] after norm + rope; overwritten by the output */
  const float *kc, *vc;
  const int32_t *pad;
  int64_t nH, nKv, d, cap, len, S;
  float scale;
  volatile int failed;
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

/* sgemm of y [rows, out] = x [rows, in] W^T (+ bias), beta 1 into y when `accumulate` */
static void sgemm_rows(const float *x, const float *w, const float *bias, int64_t rows, int64_t in, int64_t out, float *y,
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

/* y [rows, out] = x [rows, in] W^T (+ bias), W of `dtype`; 0 when out of memory */
static int linear_rows(const float *x, const void *w, int dtype, const float *bias, int64_t rows, int64_t in, int64_t out,
                       float *y, int accumulate) {
  if (rows <= SKINNY_ROWS) {
    skinny_linear(x, w, dtype, bias, rows, in, out, y, accumulate, openblas_get_num_threads());
    return 1;
  }
  if (dtype == RL2_WT_F32) {
    sgemm_rows(x, (const float *)w, bias, rows, in, out, y, accumulate);
    return 1;
  }
  float *wf = malloc(sizeof(float) * (size_t)(in * out));
  if (!wf) return 0;
  weights_to_float(w, dtype, in * out, wf);
  sgemm_rows(x, wf, bias, rows, in, out, y, accumulate);
  free(wf);
  return 1;
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
  if (!p) {
    ((struct decode_attn *)vctx)->failed = 1;
    return;
  }
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    int64_t start = c->pad[b], n = c->len + 1 - start;
    if (n <= 0) { /* no real key (a row of padding only) */
      for (int64_t r = 0; r < rep; r++) memset(c->q + b * ldq + (kvh * rep + r) * d, 0, sizeof(float) * (size_t)d);
      continue;
    }
    const float *K = c->kc + ((b * c->nKv + kvh) * c->cap + start) * d;
    const float *V = c->vc + ((b * c->nKv + kvh) * c->cap + start) * d;
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      const float *q = c->q + b * ldq + h * d;
      float *o = c->q + b * ldq + h * d; /* q is read in full before o is written */
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

/* S > 1: per (row, kv head) group, query tiles against key tiles from padLeft[b] on. Query s
   (column len+s) sees keys padLeft[b] .. len+s. Online softmax as in fused-flash-attention.c. */
static void prefill_attn_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct decode_attn *c = (const struct decode_attn *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, S = c->S, len = c->len, ldq = c->nH * d;
  float *s = malloc(sizeof(float) * (size_t)(DECODE_TILE * DECODE_TILE + DECODE_TILE * d + 2 * DECODE_TILE));
  if (!s) {
    ((struct decode_attn *)vctx)->failed = 1;
    return;
  }
  float *acc = s + DECODE_TILE * DECODE_TILE, *m = acc + DECODE_TILE * d, *l = m + DECODE_TILE;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv, start = c->pad[b];
    const float *K = c->kc + (b * c->nKv + kvh) * c->cap * d, *V = c->vc + (b * c->nKv + kvh) * c->cap * d;
    for (int64_t r = 0; r < rep; r++) {
      float *Q = c->q + b * S * ldq + (kvh * rep + r) * d;
      for (int64_t i0 = 0; i0 < S; i0 += DECODE_TILE) {
        int64_t tq = S - i0 < DECODE_TILE ? S - i0 : DECODE_TILE, end = len + i0 + tq; /* keys < end */
        for (int64_t i = 0; i < tq; i++) m[i] = -INFINITY, l[i] = 0;
        memset(acc, 0, sizeof(float) * (size_t)(tq * d));
        for (int64_t j0 = start; j0 < end; j0 += DECODE_TILE) {
          int64_t tk = end - j0 < DECODE_TILE ? end - j0 : DECODE_TILE;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tq, (int)tk, (int)d, c->scale, Q + i0 * ldq, (int)ldq,
                      K + j0 * d, (int)d, 0.0f, s, DECODE_TILE);
          for (int64_t i = 0; i < tq; i++) {
            float *row = s + i * DECODE_TILE;
            int64_t last = len + i0 + i - j0; /* keys j0 .. j0+last of this tile are seen */
            for (int64_t j = last + 1 < 0 ? 0 : last + 1; j < tk; j++) row[j] = -INFINITY;
            if (last >= 0) online_softmax_row(row, tk, &m[i], &l[i], acc + i * d, d);
          }
          for (int64_t i = 0; i < tq; i++) /* rows that saw nothing (left padding) add nothing */
            if (len + i0 + i < j0)
              for (int64_t j = 0; j < tk; j++) s[i * DECODE_TILE + j] = 0;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tq, (int)d, (int)tk, 1.0f, s, DECODE_TILE, V + j0 * d,
                      (int)d, 1.0f, acc, (int)d);
        }
        for (int64_t i = 0; i < tq; i++) {
          float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
          for (int64_t t = 0; t < d; t++) Q[(i0 + i) * ldq + t] = acc[i * d + t] * inv;
        }
      }
    }
  }
  free(s);
}

HOT static void silu_mul(float *g, const float *u, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float x = g[i];
    g[i] = x / (1.0f + fast_expf(-x)) * u[i];
  }
}

/* the slots holding matrices (Uint16Array when the weights are 16-bit) */
static int is_matrix(int slot) {
  return slot == W_Q || slot == W_K || slot == W_V || slot == W_O || slot == W_GATE || slot == W_UP || slot == W_DOWN;
}

/* Reads `slots` entries of the JS array `arr` (NULL for null/undefined): Float32Arrays, or
   Uint16Arrays in the matrix slots when `dtype` is 16-bit. */
static int read_weights(napi_env env, napi_value arr, void **w, size_t *len, int slots, int dtype) {
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
    napi_typedarray_type want = dtype != RL2_WT_F32 && is_matrix(i) ? napi_uint16_array : napi_float32_array;
    if (napi_get_typedarray_info(env, v, &type, &len[i], &ptr, NULL, NULL) != napi_ok || type != want) return 0;
    w[i] = ptr;
  }
  return 1;
}

KERNEL(decode_layer) {
  size_t argc = 10;
  napi_value argv[10];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 9) FAIL("decodeLayer expects x, weights[], dims, eps, cos, sin, kCache, vCache, padLeft(, weightDtype)");
  int32_t dtype = RL2_WT_F32;
  if (argc > 9 && (napi_get_value_int32(env, argv[9], &dtype) != napi_ok || dtype < RL2_WT_F32 || dtype > RL2_WT_F16))
    FAIL("decodeLayer: weightDtype must be 0 (float32), 1 (bfloat16) or 2 (float16)");
  void *WV[DECODE_SLOTS];
  size_t WL[DECODE_SLOTS];
  if (!read_weights(env, argv[1], WV, WL, DECODE_SLOTS, dtype))
    FAIL("decodeLayer: weights must be an array of Float32Array (Uint16Array matrices for 16-bit weights) or null");
  float *W[DECODE_SLOTS];
  for (int i = 0; i < DECODE_SLOTS; i++) W[i] = (float *)WV[i];
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
  if (ldims < 8) FAIL("decodeLayer: dims must be [B, H, nH, nKv, d, F, cap, len(, S)]");
  for (int i = 0; i < 8; i++) dims[i] = dv[i];
  int64_t B = dims[0], H = dims[1], nH = dims[2], nKv = dims[3], d = dims[4], F = dims[5], cap = dims[6], len = dims[7];
  int64_t S = ldims > 8 ? dv[8] : 1, n = B * S;
  if (B < 1 || H < 1 || nH < 1 || nKv < 1 || nH % nKv || d < 2 || d % 2 || F < 1 || len < 0 || S < 1 || cap < len + S)
    FAIL("decodeLayer: bad dims (need nH % nKv == 0, even d, S >= 1, len + S <= cap)");
  int64_t qw = nH * d, kw = nKv * d;
  size_t need[DECODE_SLOTS] = {(size_t)H, (size_t)(qw * H), (size_t)(kw * H), (size_t)(kw * H), (size_t)qw, (size_t)kw,
                               (size_t)kw, (size_t)d, (size_t)d, (size_t)(H * qw), (size_t)H, (size_t)H, (size_t)(F * H),
                               (size_t)(F * H), (size_t)(H * F), (size_t)F, (size_t)F, (size_t)H};
  static const int required[] = {W_IN_NORM, W_Q, W_K, W_V, W_O, W_POST_NORM, W_GATE, W_UP, W_DOWN};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
    if (!W[required[i]]) FAIL("decodeLayer: a required weight is null");
  for (int i = 0; i < DECODE_SLOTS; i++)
    if (W[i] && WL[i] < need[i]) FAIL("decodeLayer: a weight is shorter than dims need");
  if (lx < (size_t)(n * H) || lcs < (size_t)(n * d) || lsn < (size_t)(n * d) || lkc < (size_t)(B * kw * cap) ||
      lvc < (size_t)(B * kw * cap) || lpad < (size_t)B)
    FAIL("decodeLayer: array too short for dims");
  for (int64_t b = 0; b < B; b++)
    if (pad[b] < 0 || pad[b] > len + S) FAIL("decodeLayer: padLeft must be in [0, len + S]");

  /* q [n, qw] for the whole call (attention needs every token's), scratch for one chunk */
  int64_t ch = n < DECODE_CHUNK ? n : DECODE_CHUNK;
  float *q = malloc(sizeof(float) * (size_t)(n * qw + ch * (H + 2 * kw + 2 * F)));
  if (!q) FAIL("decodeLayer: out of memory");
  float *h = q + n * qw, *k = h + ch * H, *v = k + ch * kw, *g = v + ch * kw, *u = g + ch * F;
  float e = (float)eps;
  int ok = 1;

  for (int64_t r0 = 0; r0 < n; r0 += ch) {
    int64_t m = n - r0 < ch ? n - r0 : ch;
    float *qc = q + r0 * qw;
    rms_rows(x + r0 * H, W[W_IN_NORM], m, H, e, h);
    ok = ok && linear_rows(h, WV[W_Q], dtype, W[B_Q], m, H, qw, qc, 0);
    ok = ok && linear_rows(h, WV[W_K], dtype, W[B_K], m, H, kw, k, 0);
    ok = ok && linear_rows(h, WV[W_V], dtype, W[B_V], m, H, kw, v, 0);
    if (W[W_Q_NORM]) rms_rows(qc, W[W_Q_NORM], m * nH, d, e, qc);
    if (W[W_K_NORM]) rms_rows(k, W[W_K_NORM], m * nKv, d, e, k);
    rope_rows(qc, cs + r0 * d, sn + r0 * d, m, nH, d);
    rope_rows(k, cs + r0 * d, sn + r0 * d, m, nKv, d);
    for (int64_t t = 0; t < m; t++) {
      int64_t b = (r0 + t) / S, col = len + (r0 + t) % S;
      for (int64_t j = 0; j < nKv; j++) {
        size_t at = (size_t)(((b * nKv + j) * cap + col) * d);
        memcpy(kc + at, k + (t * nKv + j) * d, sizeof(float) * (size_t)d);
        memcpy(vc + at, v + (t * nKv + j) * d, sizeof(float) * (size_t)d);
      }
    }
  }

  if (!ok) {
    free(q);
    FAIL("decodeLayer: out of memory widening 16-bit weights");
  }
  struct decode_attn c = {q, kc, vc, pad, nH, nKv, d, cap, len, S, 1.0f / sqrtf((float)d), 0};
  int threads = openblas_get_num_threads();
  if (S == 1) {
    int64_t work = B * nH * (len + 1) * d;
    if (work >= DECODE_THREAD_WORK / 64) parallel_for_threads(B * nKv, threads, decode_attn_groups, &c);
    else decode_attn_groups(&c, 0, B * nKv);
  } else {
    /* each group's tiles run single-threaded sgemm, the groups split over the threads */
    int64_t work = B * nH * S * (len + (S + 1) / 2) * d;
    openblas_set_num_threads(1);
    parallel_for_threads(B * nKv, work >= DECODE_THREAD_WORK / 4 ? threads : 1, prefill_attn_groups, &c);
    openblas_set_num_threads(threads);
  }
  if (c.failed) {
    free(q);
    FAIL("decodeLayer: out of memory for attention scratch");
  }

  for (int64_t r0 = 0; r0 < n; r0 += ch) {
    int64_t m = n - r0 < ch ? n - r0 : ch;
    float *xc = x + r0 * H;
    ok = ok && linear_rows(q + r0 * qw, WV[W_O], dtype, W[B_O], m, qw, H, xc, 1);
    rms_rows(xc, W[W_POST_NORM], m, H, e, h);
    ok = ok && linear_rows(h, WV[W_GATE], dtype, W[B_GATE], m, H, F, g, 0);
    ok = ok && linear_rows(h, WV[W_UP], dtype, W[B_UP], m, H, F, u, 0);
    silu_mul(g, u, m * F);
    ok = ok && linear_rows(g, WV[W_DOWN], dtype, W[B_DOWN], m, F, H, xc, 1);
  }
  free(q);
  if (!ok) FAIL("decodeLayer: out of memory widening 16-bit weights");
  return NULL;
}
