/* One decoder layer over S new tokens per row (S = 1: a decode step; S = the prompt length: a
   prefill) as a single call, over a KV cache laid out for appends; and a whole forward (the
   embedding, every layer, the final norm and the LM head) as a single call. */
#include "paged-kv.h"

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
 * Projections are decode_linear (decode-linear.c): up to SKINNY_ROWS tokens (a decode step)
 * the skinny products on every thread, one pass over each weight (q, k and v as one job over the
 * threads, gate and up as another, since each reads the same input); more in chunks of at most
 * DECODE_CHUNK tokens (scratch stays small for long prompts) through sgemm.
 * Attention is split over (row, kv head) groups: for one token a pass over the group's keys and
 * values for all its query heads; for S > 1 query and key tiles with an online softmax
 * (FlashAttention, Dao et al. 2022, https://arxiv.org/abs/2205.14135), so no S x S block
 * exists. It writes its output over q (each tile reads only its own queries).
 *
 * decodeStep(tokens, embed, layers, finalNorm, head, dims, eps, cos, sin, kCaches, vCaches,
 *            padLeft, logits(, weightDtype)): the whole model over S new tokens per row:
 *   tokens   Int32Array [B, S] of ids < V; x = their rows of embed [V, H] (float32)
 *   layers   JS array of L weight arrays (decodeLayer's); kCaches / vCaches: L caches
 *   dims     Int32Array [B, H, nH, nKv, d, F, cap, len, S, V, L]
 *   logits   [B, V] = rms(x of each row's last token) finalNorm head^T, head [V, H] a matrix
 *            of weightDtype (the tied embedding, or lm_head)
 *   table, lens (optional): a KV cache in blocks instead (paged-kv.h): kCaches[l] / vCaches[l] arrays
 *            of pool segments, table Int32Array [B, tw] of block ids, lens [B] the tokens each row
 *            holds, dims [.., bs, tw, segBlocks] (cap and len unread); token s >= padLeft[b] of row b
 *            is written at the row's token lens[b] + s - padLeft[b] (a token before padLeft[b] is
 *            neither written nor attended, and gets zeros)
 * A decode step (B * S <= SKINNY_ROWS) allocates nothing: each thread keeps its scratch.
 */
/* Multiply-adds per call below which one thread does the prefill attention / the one-token one. */
#define DECODE_THREAD_WORK (1 << 24)
#define ATTN_THREAD_WORK (1 << 15)
enum {
  W_IN_NORM, W_Q, W_K, W_V, B_Q, B_K, B_V, W_Q_NORM, W_K_NORM, W_O, B_O, W_POST_NORM, W_GATE, W_UP, W_DOWN,
  B_GATE, B_UP, B_DOWN, DECODE_SLOTS
};

/* Tokens per projection chunk: the chunk's scratch is DECODE_CHUNK x (H + 2 nKv d + 2 F) floats. */
#define DECODE_CHUNK 256
/* Query and key tile of the S > 1 attention. */
#define DECODE_TILE 64

/* One layer's arrays and sizes (a decodeLayer call, or a layer of a decodeStep). */
struct layer_call {
  void *w[DECODE_SLOTS];
  size_t wl[DECODE_SLOTS];
  int64_t B, H, nH, nKv, d, F, cap, len, S;
  float eps;
  const float *cs, *sn; /* [B * S, d] */
  float *kc, *vc;
  size_t lkc, lvc;
  const int32_t *pad;
  int dtype;
  struct paged_kv *pg; /* a cache in blocks (paged-kv.h; kc, vc, cap and len unused), or NULL */
};

struct decode_attn {
  float *q; /* [B, S, nH*d] after norm + rope; overwritten by the output */
  const float *kc, *vc;
  const int32_t *pad;
  int64_t nH, nKv, d, cap, len, S;
  float scale;
  volatile int failed;
};

/* What the row loops below share (parallel_for's context). */
struct rows_job {
  float *x, *y;
  const float *w, *u, *cs, *sn;
  int64_t h, heads;
  float eps;
};

HOT static void rms_range(void *vctx, int64_t r0, int64_t r1) {
  const struct rows_job *c = (const struct rows_job *)vctx;
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

/* y [rows, h] = rms(x) w (threaded when large: a prefill) */
static void rms_rows(const float *x, const float *w, int64_t rows, int64_t h, float eps, float *y) {
  struct rows_job c = {(float *)x, y, w, NULL, NULL, NULL, h, 0, eps};
  parallel_for(rows, GRAIN / h + 1, rms_range, &c);
}

HOT static void rope_range(void *vctx, int64_t t0, int64_t t1) {
  const struct rows_job *c = (const struct rows_job *)vctx;
  int64_t d = c->h, half = d / 2;
  for (int64_t t = t0; t < t1; t++) {
    const float *cs = c->cs + t * d, *sn = c->sn + t * d;
    for (int64_t hh = 0; hh < c->heads; hh++) {
      float *r = c->x + (t * c->heads + hh) * d;
      for (int64_t j = 0; j < half; j++) {
        float a = r[j], b = r[j + half];
        r[j] = a * cs[j] - b * sn[j];
        r[j + half] = b * cs[j + half] + a * sn[j + half];
      }
    }
  }
}

/* x [rows, heads, d] in place: rotate-half RoPE with cos/sin [rows, d] */
static void rope_rows(float *x, const float *cs, const float *sn, int64_t rows, int64_t heads, int64_t d) {
  struct rows_job c = {x, NULL, NULL, NULL, cs, sn, d, heads, 0};
  parallel_for(rows, GRAIN / (heads * d) + 1, rope_range, &c);
}

/* S = 1: each (row, kv head) group reads its keys and values once for all its query heads */
static void decode_attn_groups(void *vctx, int64_t g0, int64_t g1) {
  struct decode_attn *c = (struct decode_attn *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, ldq = c->nH * d;
  float *p = rl2_scratch(SCRATCH_ATTN, (size_t)(rep * (c->len + 1)));
  if (!p) {
    c->failed = 1;
    return;
  }
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    int64_t start = c->pad[b], n = c->len + 1 - start;
    float *q = c->q + b * ldq + kvh * rep * d; /* the group's query heads, one after another */
    if (n <= 0) { /* no real key (a row of padding only) */
      memset(q, 0, sizeof(float) * (size_t)(rep * d));
      continue;
    }
    const float *K = c->kc + ((b * c->nKv + kvh) * c->cap + start) * d;
    const float *V = c->vc + ((b * c->nKv + kvh) * c->cap + start) * d;
    for (int64_t j = 0; j < n; j++)
      for (int64_t r = 0; r < rep; r++) p[r * n + j] = dot_lanes(q + r * d, K + j * d, d) * c->scale;
    for (int64_t r = 0; r < rep; r++) {
      float *pr = p + r * n;
      float m = row_max(pr, n);
      exp_shifted(pr, n, m, 1.0f, pr);
      float inv = 1.0f / row_sum(pr, n);
      for (int64_t j = 0; j < n; j++) pr[j] *= inv;
    }
    memset(q, 0, sizeof(float) * (size_t)(rep * d)); /* every score is taken: o over q */
    for (int64_t j = 0; j < n; j++)
      for (int64_t r = 0; r < rep; r++) axpy(q + r * d, p[r * n + j], V + j * d, d);
  }
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

HOT static void silu_range(void *vctx, int64_t i0, int64_t i1) {
  const struct rows_job *c = (const struct rows_job *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    float x = c->x[i];
    c->x[i] = x / (1.0f + fast_expf(-x)) * c->u[i];
  }
}

/* g = silu(g) * u over n values (threaded when large) */
static void silu_mul(float *g, const float *u, int64_t n) {
  struct rows_job c = {g, NULL, NULL, u, NULL, NULL, 0, 0, 0};
  parallel_for(n, GRAIN, silu_range, &c);
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

/* NULL, or what is wrong with the layer's sizes or arrays (lx, lcs, lsn, lpad: lengths of x,
   cos, sin, padLeft) */
static const char *check_layer(const struct layer_call *c, size_t lx, size_t lcs, size_t lsn, size_t lpad) {
  int64_t B = c->B, H = c->H, nH = c->nH, nKv = c->nKv, d = c->d, F = c->F, len = c->len, S = c->S, n = B * S;
  if (B < 1 || H < 1 || nH < 1 || nKv < 1 || nH % nKv || d < 2 || d % 2 || F < 1 || len < 0 || S < 1 || c->cap < len + S)
    return "bad dims (need nH % nKv == 0, even d, S >= 1, len + S <= cap)";
  int64_t qw = nH * d, kw = nKv * d;
  size_t need[DECODE_SLOTS] = {(size_t)H, (size_t)(qw * H), (size_t)(kw * H), (size_t)(kw * H), (size_t)qw, (size_t)kw,
                               (size_t)kw, (size_t)d, (size_t)d, (size_t)(H * qw), (size_t)H, (size_t)H, (size_t)(F * H),
                               (size_t)(F * H), (size_t)(H * F), (size_t)F, (size_t)F, (size_t)H};
  static const int required[] = {W_IN_NORM, W_Q, W_K, W_V, W_O, W_POST_NORM, W_GATE, W_UP, W_DOWN};
  for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
    if (!c->w[required[i]]) return "a required weight is null";
  for (int i = 0; i < DECODE_SLOTS; i++)
    if (c->w[i] && c->wl[i] < need[i]) return "a weight is shorter than dims need";
  size_t cache = c->pg ? 0 : (size_t)(B * kw * c->cap);
  if (lx < (size_t)(n * H) || lcs < (size_t)(n * d) || lsn < (size_t)(n * d) || c->lkc < cache || c->lvc < cache ||
      lpad < (size_t)B)
    return "array too short for dims";
  if (c->pg) return paged_check(c->pg, B, S, c->pad);
  for (int64_t b = 0; b < B; b++)
    if (c->pad[b] < 0 || c->pad[b] > len + S) return "padLeft must be in [0, len + S]";
  return NULL;
}

/* q [n, qw] after norm and RoPE, and this chunk's keys and values into the cache */
static int attention_inputs(const struct layer_call *c, const float *x, int64_t r0, int64_t m, float *qc, float *h, float *k,
                            float *v) {
  float **W = (float **)c->w;
  int64_t H = c->H, d = c->d, nKv = c->nKv, kw = nKv * d, qw = c->nH * d;
  rms_rows(x + r0 * H, W[W_IN_NORM], m, H, c->eps, h);
  struct linear_out qkv[3] = {{c->w[W_Q], W[B_Q], qw, qc}, {c->w[W_K], W[B_K], kw, k}, {c->w[W_V], W[B_V], kw, v}};
  if (!decode_linears(h, c->dtype, m, H, 3, qkv)) return 0;
  if (W[W_Q_NORM]) rms_rows(qc, W[W_Q_NORM], m * c->nH, d, c->eps, qc);
  if (W[W_K_NORM]) rms_rows(k, W[W_K_NORM], m * nKv, d, c->eps, k);
  rope_rows(qc, c->cs + r0 * d, c->sn + r0 * d, m, c->nH, d);
  rope_rows(k, c->cs + r0 * d, c->sn + r0 * d, m, nKv, d);
  for (int64_t t = 0; t < m; t++) {
    int64_t b = (r0 + t) / c->S, col = c->len + (r0 + t) % c->S;
    if (c->pg) {
      if ((r0 + t) % c->S >= c->pad[b]) paged_write(c->pg, b, (r0 + t) % c->S, c->pad, k + t * kw, v + t * kw, nKv, d);
      continue;
    }
    for (int64_t j = 0; j < nKv; j++) {
      size_t at = (size_t)(((b * nKv + j) * c->cap + col) * d);
      memcpy(c->kc + at, k + (t * nKv + j) * d, sizeof(float) * (size_t)d);
      memcpy(c->vc + at, v + (t * nKv + j) * d, sizeof(float) * (size_t)d);
    }
  }
  return 1;
}

/* attention of every new token over q in place; 0 when out of memory */
static int attend(const struct layer_call *c, float *q) {
  if (c->pg) return paged_attend(c->pg, q, c->pad, c->B, c->S, c->nH, c->nKv, c->d);
  struct decode_attn a = {q, c->kc, c->vc, c->pad, c->nH, c->nKv, c->d, c->cap, c->len, c->S, 1.0f / sqrtf((float)c->d), 0};
  int threads = openblas_get_num_threads();
  int64_t groups = c->B * c->nKv;
  if (c->S == 1) {
    int64_t work = c->B * c->nH * (c->len + 1) * c->d;
    parallel_for_threads(groups, work >= ATTN_THREAD_WORK ? threads : 1, decode_attn_groups, &a);
  } else {
    /* each group's tiles run single-threaded sgemm, the groups split over the threads */
    int64_t work = c->B * c->nH * c->S * (c->len + (c->S + 1) / 2) * c->d;
    openblas_set_num_threads(1);
    parallel_for_threads(groups, work >= DECODE_THREAD_WORK / 4 ? threads : 1, prefill_attn_groups, &a);
    openblas_set_num_threads(threads);
  }
  return !a.failed;
}

/* x += attention's output projection, then the MLP, for m tokens from r0 */
static int output_and_mlp(const struct layer_call *c, float *x, const float *q, int64_t r0, int64_t m, float *h, float *g,
                          float *u) {
  float **W = (float **)c->w;
  int64_t H = c->H, F = c->F, qw = c->nH * c->d;
  float *xc = x + r0 * H;
  if (!decode_linear(q + r0 * qw, c->w[W_O], c->dtype, W[B_O], m, qw, H, xc, 1)) return 0;
  rms_rows(xc, W[W_POST_NORM], m, H, c->eps, h);
  struct linear_out gate_up[2] = {{c->w[W_GATE], W[B_GATE], F, g}, {c->w[W_UP], W[B_UP], F, u}};
  if (!decode_linears(h, c->dtype, m, H, 2, gate_up)) return 0;
  silu_mul(g, u, m * F);
  return decode_linear(g, c->w[W_DOWN], c->dtype, W[B_DOWN], m, F, H, xc, 1);
}

/* one layer on x [B * S, H] in place (checked by check_layer); 0 when out of memory. A decode
   step's buffers are the thread's scratch, a prefill's are allocated. */
static int run_layer(const struct layer_call *c, float *x) {
  int64_t n = c->B * c->S, H = c->H, qw = c->nH * c->d, kw = c->nKv * c->d, F = c->F;
  int64_t ch = n < DECODE_CHUNK ? n : DECODE_CHUNK;
  size_t floats = (size_t)(n * qw + ch * (H + 2 * kw + 2 * F));
  int small = n <= SKINNY_ROWS;
  float *q = small ? rl2_scratch(SCRATCH_LAYER, floats) : malloc(sizeof(float) * floats);
  if (!q) return 0;
  float *h = q + n * qw, *k = h + ch * H, *v = k + ch * kw, *g = v + ch * kw, *u = g + ch * F;
  int ok = 1;
  for (int64_t r0 = 0; ok && r0 < n; r0 += ch)
    ok = attention_inputs(c, x, r0, n - r0 < ch ? n - r0 : ch, q + r0 * qw, h, k, v);
  ok = ok && attend(c, q);
  for (int64_t r0 = 0; ok && r0 < n; r0 += ch) ok = output_and_mlp(c, x, q, r0, n - r0 < ch ? n - r0 : ch, h, g, u);
  if (!small) free(q);
  return ok;
}

/* Throws "rl2 native: <kernel>: <what>" (a message built at run time) and returns NULL. */
static napi_value fail_with(napi_env env, const char *kernel, const char *what) {
  char message[256];
  snprintf(message, sizeof(message), "rl2 native: %s: %s", kernel, what);
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* A typed array argument of type `want`; 0 when it is not one. */
static int typed(napi_env env, napi_value v, napi_typedarray_type want, void **ptr, size_t *len) {
  napi_typedarray_type t;
  return napi_get_typedarray_info(env, v, &t, len, ptr, NULL, NULL) == napi_ok && t == want;
}

/* weightDtype from argument `v`: 0 (float32, also when absent), 1 (bfloat16) or 2 (float16); -1 when another */
static int32_t weight_dtype(napi_env env, napi_value *v) {
  int32_t dtype = RL2_WT_F32;
  if (v && (napi_get_value_int32(env, *v, &dtype) != napi_ok || dtype < RL2_WT_F32 || dtype > RL2_WT_F16)) return -1;
  return dtype;
}

KERNEL(decode_layer) {
  size_t argc = 10;
  napi_value argv[10];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 9) FAIL("decodeLayer expects x, weights[], dims, eps, cos, sin, kCache, vCache, padLeft(, weightDtype)");
  struct layer_call c = {0};
  c.dtype = weight_dtype(env, argc > 9 ? &argv[9] : NULL);
  if (c.dtype < 0) FAIL("decodeLayer: weightDtype must be 0 (float32), 1 (bfloat16) or 2 (float16)");
  if (!read_weights(env, argv[1], c.w, c.wl, DECODE_SLOTS, c.dtype))
    FAIL("decodeLayer: weights must be an array of Float32Array (Uint16Array matrices for 16-bit weights) or null");
  float *x;
  int32_t *dv, *pad;
  size_t lx, ldims, lcs, lsn, lpad;
  double eps = 1e-6;
  if (!typed(env, argv[0], napi_float32_array, (void **)&x, &lx) ||
      !typed(env, argv[2], napi_int32_array, (void **)&dv, &ldims) ||
      !typed(env, argv[4], napi_float32_array, (void **)&c.cs, &lcs) ||
      !typed(env, argv[5], napi_float32_array, (void **)&c.sn, &lsn) ||
      !typed(env, argv[6], napi_float32_array, (void **)&c.kc, &c.lkc) ||
      !typed(env, argv[7], napi_float32_array, (void **)&c.vc, &c.lvc) ||
      !typed(env, argv[8], napi_int32_array, (void **)&pad, &lpad))
    FAIL("decodeLayer expects Float32Array x, cos, sin, kCache, vCache and Int32Array dims, padLeft");
  if (napi_get_value_double(env, argv[3], &eps) != napi_ok) FAIL("decodeLayer: eps must be a number");
  if (ldims < 8) FAIL("decodeLayer: dims must be [B, H, nH, nKv, d, F, cap, len(, S)]");
  c.B = dv[0], c.H = dv[1], c.nH = dv[2], c.nKv = dv[3], c.d = dv[4], c.F = dv[5], c.cap = dv[6], c.len = dv[7];
  c.S = ldims > 8 ? dv[8] : 1;
  c.eps = (float)eps;
  c.pad = pad;
  const char *bad = check_layer(&c, lx, lcs, lsn, lpad);
  if (bad) return fail_with(env, "decodeLayer", bad);
  if (!run_layer(&c, x)) FAIL("decodeLayer: out of memory");
  return NULL;
}

/* element i of the JS array `arr` as a Float32Array; 0 when it is not one */
static int float_element(napi_env env, napi_value arr, uint32_t i, float **ptr, size_t *len) {
  napi_value v;
  return napi_get_element(env, arr, i, &v) == napi_ok && typed(env, v, napi_float32_array, (void **)ptr, len);
}

/* every layer of a decodeStep on x; NULL, or what went wrong */
static const char *step_layers(napi_env env, napi_value *argv, struct layer_call *c, int64_t L, float *x, size_t lx,
                               size_t lcs, size_t lsn, size_t lpad) {
  uint32_t nl = 0, nk = 0, nv = 0;
  if (napi_get_array_length(env, argv[2], &nl) != napi_ok || napi_get_array_length(env, argv[9], &nk) != napi_ok ||
      napi_get_array_length(env, argv[10], &nv) != napi_ok || nl < (uint32_t)L || nk < (uint32_t)L || nv < (uint32_t)L)
    return "layers, kCaches and vCaches must be arrays of dims[10] (L) entries";
  for (uint32_t l = 0; l < (uint32_t)L; l++) {
    napi_value lw;
    if (napi_get_element(env, argv[2], l, &lw) != napi_ok || !read_weights(env, lw, c->w, c->wl, DECODE_SLOTS, c->dtype))
      return "each layer's weights must be an array of Float32Array (Uint16Array matrices for 16-bit weights) or null";
    if (c->pg) {
      const char *bad = paged_read_layer(env, argv[9], argv[10], l, c->nKv, c->d, c->pg);
      if (bad) return bad;
    } else if (!float_element(env, argv[9], l, &c->kc, &c->lkc) || !float_element(env, argv[10], l, &c->vc, &c->lvc))
      return "kCaches and vCaches must hold Float32Arrays";
    const char *bad = check_layer(c, lx, lcs, lsn, lpad);
    if (bad) return bad;
    if (!run_layer(c, x)) return "out of memory";
  }
  return NULL;
}

/* x [n, H]: the embedding rows of `tokens`; 0 when an id is outside [0, V) */
static int embed_rows(const int32_t *tokens, int64_t n, const float *table, int64_t V, int64_t H, float *x) {
  for (int64_t t = 0; t < n; t++) {
    if (tokens[t] < 0 || tokens[t] >= V) return 0;
    memcpy(x + t * H, table + (int64_t)tokens[t] * H, sizeof(float) * (size_t)H);
  }
  return 1;
}

/* the rows' last tokens of x [B, S, H] through the final norm and the head into logits */
static int step_head(const struct layer_call *c, const float *x, const float *norm, const void *head, int64_t V,
                     float *last, float *logits) {
  for (int64_t b = 0; b < c->B; b++)
    memcpy(last + b * c->H, x + ((b + 1) * c->S - 1) * c->H, sizeof(float) * (size_t)c->H);
  rms_rows(last, norm, c->B, c->H, c->eps, last);
  return decode_linear(last, head, c->dtype, NULL, c->B, c->H, V, logits, 0);
}

/* A decodeStep's optional cache in blocks: table argv[14], lens argv[15], dims [.., bs, tw, segBlocks];
   1 when there is none or it reads, 0 when it is malformed. */
static int paged_args(napi_env env, napi_value *argv, size_t argc, const int32_t *dv, size_t ldims, int64_t B,
                      struct paged_kv *pg, struct layer_call *c) {
  napi_valuetype t;
  if (argc < 15 || napi_typeof(env, argv[14], &t) != napi_ok || t == napi_undefined || t == napi_null) return 1;
  size_t ltab, llens;
  if (argc < 16 || ldims < 14 || !typed(env, argv[14], napi_int32_array, (void **)&pg->table, &ltab) ||
      !typed(env, argv[15], napi_int32_array, (void **)&pg->lens, &llens))
    return 0;
  pg->bs = dv[11], pg->tw = dv[12], pg->seg_blocks = dv[13];
  if (pg->tw < 1 || ltab < (size_t)(B * pg->tw) || llens < (size_t)B) return 0;
  c->pg = pg;
  c->cap = c->S, c->len = 0; /* unused by a paged cache */
  return 1;
}

KERNEL(decode_step) {
  size_t argc = 16;
  napi_value argv[16];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 13)
    FAIL("decodeStep expects tokens, embed, layers[], finalNorm, head, dims, eps, cos, sin, kCaches[], vCaches[], padLeft, "
         "logits(, weightDtype(, table, lens)))");
  struct layer_call c = {0};
  c.dtype = weight_dtype(env, argc > 13 ? &argv[13] : NULL);
  if (c.dtype < 0) FAIL("decodeStep: weightDtype must be 0 (float32), 1 (bfloat16) or 2 (float16)");
  int32_t *tokens, *dv, *pad;
  float *embed, *norm, *logits;
  void *head;
  size_t ltok, lemb, lnorm, lhead, ldims, lcs, lsn, lpad, llog;
  double eps = 1e-6;
  if (!typed(env, argv[0], napi_int32_array, (void **)&tokens, &ltok) ||
      !typed(env, argv[1], napi_float32_array, (void **)&embed, &lemb) ||
      !typed(env, argv[3], napi_float32_array, (void **)&norm, &lnorm) ||
      !typed(env, argv[4], c.dtype == RL2_WT_F32 ? napi_float32_array : napi_uint16_array, &head, &lhead) ||
      !typed(env, argv[5], napi_int32_array, (void **)&dv, &ldims) ||
      !typed(env, argv[7], napi_float32_array, (void **)&c.cs, &lcs) ||
      !typed(env, argv[8], napi_float32_array, (void **)&c.sn, &lsn) ||
      !typed(env, argv[11], napi_int32_array, (void **)&pad, &lpad) ||
      !typed(env, argv[12], napi_float32_array, (void **)&logits, &llog))
    FAIL("decodeStep expects Int32Array tokens, dims, padLeft, Float32Array embed, finalNorm, cos, sin, logits and head a "
         "Float32Array (weightDtype 0) or Uint16Array (1, 2)");
  if (napi_get_value_double(env, argv[6], &eps) != napi_ok) FAIL("decodeStep: eps must be a number");
  if (ldims < 11) FAIL("decodeStep: dims must be [B, H, nH, nKv, d, F, cap, len, S, V, L]");
  c.B = dv[0], c.H = dv[1], c.nH = dv[2], c.nKv = dv[3], c.d = dv[4], c.F = dv[5], c.cap = dv[6], c.len = dv[7];
  c.S = dv[8];
  c.eps = (float)eps;
  c.pad = pad;
  int64_t V = dv[9], L = dv[10], n = c.B * c.S;
  if (c.B < 1 || c.H < 1 || c.S < 1 || V < 1 || L < 0) FAIL("decodeStep: bad dims (need B, H, S, V >= 1, L >= 0)");
  struct paged_kv pg; /* 64 KiB of segment pointers */
  if (!paged_args(env, argv, argc, dv, ldims, c.B, &pg, &c))
    FAIL("decodeStep: a paged cache needs Int32Array table [B, tw], lens [B] and dims [.., blockSize, tw, segmentBlocks]");
  if (ltok < (size_t)n || lemb < (size_t)(V * c.H) || lnorm < (size_t)c.H || lhead < (size_t)(V * c.H) ||
      llog < (size_t)(c.B * V))
    FAIL("decodeStep: array too short for dims");
  size_t floats = (size_t)((n + c.B) * c.H);
  int small = n <= SKINNY_ROWS;
  float *x = small ? rl2_scratch(SCRATCH_STEP, floats) : malloc(sizeof(float) * floats);
  if (!x) FAIL("decodeStep: out of memory");
  const char *bad = embed_rows(tokens, n, embed, V, c.H, x) ? NULL : "a token id is outside [0, V)";
  if (!bad) bad = step_layers(env, argv, &c, L, x, (size_t)(n * c.H), lcs, lsn, lpad);
  if (!bad && !step_head(&c, x, norm, head, V, x + n * c.H, logits)) bad = "out of memory";
  if (!small) free(x);
  return bad ? fail_with(env, "decodeStep", bad) : NULL;
}
