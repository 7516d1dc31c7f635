/* Causal attention within segments, in tiles (FlashAttention, Dao et al. 2022,
   https://arxiv.org/abs/2205.14135): memory linear in sequence length, forward and backward. */
#include "kernels.h"

/*
 * q/out/dq [B, Tq, nH, d] (row stride nH*d); k/v/dk/dv [B, nKv, Tk, d]; seg [B, Tk] int32;
 * optional qpos [B, Tq] int32, the key position of each query (absent: Tq = Tk, qpos[i] = i).
 * Query i may attend to key j iff j <= qpos[i] and seg[j] == seg[qpos[i]] (packed causal rows;
 * a left-pad run is its own segment; with qpos, a context-parallel rank's queries, a subset of
 * the row, over all of its keys). Query head h reads kv head h / (nH / nKv).
 * Forward per (query tile, key tile) with an online softmax: running max m, sum l and output
 * accumulator rescaled as the max grows; lse = m + log l [B, nH, T] is kept for the backward.
 * Backward recomputes P = exp(scale q k^T - lse) per tile: dV += P^T dO, dP = dO V^T,
 * dS = P (dP - rowsum(dO * O)), dQ += scale dS K, dK += scale dS^T Q.
 * Nothing of size T x T exists: scratch is a few TILE x TILE and TILE x d blocks per thread.
 */
#define TILE 64

struct flash_ctx {
  const float *q, *k, *v, *o, *dout, *lse_in;
  const int32_t *seg;
  /* first[b*Tk + j]: the first position of row b in segment seg[b, j]; keys before it are never
     seen by a query at j, so a query tile starts its key loop at the smallest first[] it holds
     (packed rows of short sequences cost about T x sequence length, not T x T / 2) */
  const int64_t *first;
  const int32_t *qpos; /* NULL: query i is at key position i */
  volatile int failed;
  float *out, *lse, *dq, *dk, *dv;
  int64_t B, Tq, Tk, nH, nKv, d;
  float scale;
};

/* Key position of query i of row b. */
static inline int64_t query_at(const struct flash_ctx *c, int64_t b, int64_t i) {
  return c->qpos ? c->qpos[b * c->Tq + i] : i;
}

/* s [tq, tk] = scale q k^T with disallowed pairs -inf; returns whether any pair is allowed. */
static int tile_scores(const struct flash_ctx *c, int64_t b, const float *Q, int64_t ldq, const float *K, const int32_t *seg,
                       int64_t i0, int64_t tq, int64_t j0, int64_t tk, float *s) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tq, (int)tk, (int)c->d, c->scale, Q + i0 * ldq, (int)ldq,
              K + j0 * c->d, (int)c->d, 0.0f, s, TILE);
  int any = 0;
  for (int64_t i = 0; i < tq; i++) {
    float *row = s + i * TILE;
    int64_t at = query_at(c, b, i0 + i);
    int32_t si = seg[at];
    for (int64_t j = 0; j < tk; j++) {
      int ok = j0 + j <= at && seg[j0 + j] == si;
      row[j] = ok ? row[j] : -INFINITY;
      any |= ok;
    }
  }
  return any;
}

/* Keys [*start, *end) hold every key queries i0 .. i0+tq-1 of row b may see: from the smallest
   first[] of their positions to their largest position. */
static void key_range(const struct flash_ctx *c, int64_t b, const int64_t *first, int64_t i0, int64_t tq, int64_t *start,
                      int64_t *end) {
  int64_t lo = c->Tk, hi = 0;
  for (int64_t i = 0; i < tq; i++) {
    int64_t at = query_at(c, b, i0 + i);
    lo = first[at] < lo ? first[at] : lo;
    hi = at + 1 > hi ? at + 1 : hi;
  }
  *start = lo;
  *end = hi;
}

/* first[] of each row (see flash_ctx) through an open-addressing table of segment ids. */
static int first_positions(const int32_t *seg, int64_t B, int64_t T, int64_t *first) {
  int64_t cap = 2;
  while (cap < 2 * T) cap <<= 1;
  int64_t *slot = malloc(sizeof(int64_t) * (size_t)cap);
  if (!slot) return 0;
  for (int64_t b = 0; b < B; b++) {
    const int32_t *s = seg + b * T;
    for (int64_t x = 0; x < cap; x++) slot[x] = -1;
    for (int64_t i = 0; i < T; i++) {
      uint32_t h = (uint32_t)s[i] * 2654435761u;
      int64_t x = (int64_t)(h & (uint32_t)(cap - 1));
      while (slot[x] >= 0 && s[slot[x]] != s[i]) x = (x + 1) & (cap - 1);
      if (slot[x] < 0) slot[x] = i;
      first[b * T + i] = slot[x];
    }
  }
  free(slot);
  return 1;
}

static void flash_fwd_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct flash_ctx *c = (const struct flash_ctx *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, Tq = c->Tq, Tk = c->Tk, ldq = c->nH * d;
  float *s = malloc(sizeof(float) * (size_t)(TILE * TILE + TILE * d + 2 * TILE));
  if (!s) {
    ((struct flash_ctx *)vctx)->failed = 1;
    return;
  }
  float *acc = s + TILE * TILE, *m = acc + TILE * d, *l = m + TILE;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    const float *K = c->k + (b * c->nKv + kvh) * Tk * d, *V = c->v + (b * c->nKv + kvh) * Tk * d;
    const int32_t *seg = c->seg + b * Tk;
    const int64_t *first = c->first + b * Tk;
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      const float *Q = c->q + b * Tq * ldq + h * d;
      float *O = c->out + b * Tq * ldq + h * d, *lse = c->lse + (b * c->nH + h) * Tq;
      for (int64_t i0 = 0; i0 < Tq; i0 += TILE) {
        int64_t tq = Tq - i0 < TILE ? Tq - i0 : TILE, kstart, kend;
        for (int64_t i = 0; i < tq; i++) m[i] = -INFINITY, l[i] = 0;
        memset(acc, 0, sizeof(float) * (size_t)(tq * d));
        key_range(c, b, first, i0, tq, &kstart, &kend);
        for (int64_t j0 = kstart; j0 < kend; j0 += TILE) {
          int64_t tk = kend - j0 < TILE ? kend - j0 : TILE;
          if (!tile_scores(c, b, Q, ldq, K, seg, i0, tq, j0, tk, s)) continue;
          for (int64_t i = 0; i < tq; i++) online_softmax_row(s + i * TILE, tk, &m[i], &l[i], acc + i * d, d);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tq, (int)d, (int)tk, 1.0f, s, TILE, V + j0 * d, (int)d,
                      1.0f, acc, (int)d);
        }
        for (int64_t i = 0; i < tq; i++) {
          float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
          for (int64_t t = 0; t < d; t++) O[(i0 + i) * ldq + t] = acc[i * d + t] * inv;
          lse[i0 + i] = l[i] > 0 ? m[i] + logf(l[i]) : INFINITY;
        }
      }
    }
  }
  free(s);
}

static void flash_bwd_groups(void *vctx, int64_t g0, int64_t g1) {
  const struct flash_ctx *c = (const struct flash_ctx *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, Tq = c->Tq, Tk = c->Tk, ldq = c->nH * d;
  float *s = malloc(sizeof(float) * (size_t)(2 * TILE * TILE + TILE * d + TILE));
  if (!s) {
    ((struct flash_ctx *)vctx)->failed = 1;
    return;
  }
  float *dp = s + TILE * TILE, *dqt = dp + TILE * TILE, *D = dqt + TILE * d;
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv;
    const float *K = c->k + (b * c->nKv + kvh) * Tk * d, *V = c->v + (b * c->nKv + kvh) * Tk * d;
    float *dK = c->dk + (b * c->nKv + kvh) * Tk * d, *dV = c->dv + (b * c->nKv + kvh) * Tk * d;
    const int32_t *seg = c->seg + b * Tk;
    const int64_t *first = c->first + b * Tk;
    memset(dK, 0, sizeof(float) * (size_t)(Tk * d));
    memset(dV, 0, sizeof(float) * (size_t)(Tk * d));
    for (int64_t r = 0; r < rep; r++) {
      int64_t h = kvh * rep + r;
      const float *Q = c->q + b * Tq * ldq + h * d, *O = c->o + b * Tq * ldq + h * d, *dO = c->dout + b * Tq * ldq + h * d;
      const float *lse = c->lse_in + (b * c->nH + h) * Tq;
      float *dQ = c->dq + b * Tq * ldq + h * d;
      for (int64_t i0 = 0; i0 < Tq; i0 += TILE) {
        int64_t tq = Tq - i0 < TILE ? Tq - i0 : TILE, kstart, kend;
        for (int64_t i = 0; i < tq; i++) {
          float dot = 0;
          for (int64_t t = 0; t < d; t++) dot += dO[(i0 + i) * ldq + t] * O[(i0 + i) * ldq + t];
          D[i] = dot;
        }
        memset(dqt, 0, sizeof(float) * (size_t)(tq * d));
        key_range(c, b, first, i0, tq, &kstart, &kend);
        for (int64_t j0 = kstart; j0 < kend; j0 += TILE) {
          int64_t tk = kend - j0 < TILE ? kend - j0 : TILE;
          if (!tile_scores(c, b, Q, ldq, K, seg, i0, tq, j0, tk, s)) continue;
          for (int64_t i = 0; i < tq; i++) {
            float *row = s + i * TILE;
            float li = lse[i0 + i];
            for (int64_t j = 0; j < tk; j++) row[j] = row[j] == -INFINITY ? 0.0f : fast_expf(row[j] - li);
          }
          /* dV[j0..] += P^T dO ; dP = dO V^T */
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)tk, (int)d, (int)tq, 1.0f, s, TILE, dO + i0 * ldq, (int)ldq,
                      1.0f, dV + j0 * d, (int)d);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tq, (int)tk, (int)d, 1.0f, dO + i0 * ldq, (int)ldq, V + j0 * d,
                      (int)d, 0.0f, dp, TILE);
          for (int64_t i = 0; i < tq; i++)
            for (int64_t j = 0; j < tk; j++) dp[i * TILE + j] = s[i * TILE + j] * (dp[i * TILE + j] - D[i]);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tq, (int)d, (int)tk, c->scale, dp, TILE, K + j0 * d, (int)d,
                      1.0f, dqt, (int)d);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)tk, (int)d, (int)tq, c->scale, dp, TILE, Q + i0 * ldq, (int)ldq,
                      1.0f, dK + j0 * d, (int)d);
        }
        for (int64_t i = 0; i < tq; i++)
          for (int64_t t = 0; t < d; t++) dQ[(i0 + i) * ldq + t] = dqt[i * d + t];
      }
    }
  }
  free(s);
}

/*
 * flashAttention(q, k, v, seg, dims, scale, out, lse, qpos) and
 * flashAttentionGrad(q, k, v, seg, dims, scale, out, lse, dout, dq, dk, dv, qpos): dims
 * Int32Array [B, T, nH, nKv, d] (queries are the keys' positions; qpos is not read) or
 * [B, Tq, nH, nKv, d, Tk] with qpos [B, Tq] in [0, Tk). Groups (b, kv head) are split over
 * the configured threads, each running single-threaded sgemm.
 */
static napi_value flash_common(napi_env env, napi_callback_info info, int back) {
  struct flash_ctx c;
  memset(&c, 0, sizeof(c));
  int64_t dims[MAX_RANK];
  int rank;
  double scale = 1;
  size_t lq, lk, lv, ls, lo, ll, lp, l1 = 0, l2 = 0, l3 = 0, l4 = 0;
  float *q, *k, *v, *o, *lse, *dout = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
  int32_t *seg, *qpos;
  const char *what = "flashAttention expects Float32Array q, k, v, Int32Array seg, Int32Array dims, scale, "
                     "Float32Array out, lse (dout, dq, dk, dv), Int32Array qpos";
  int ok = back ? read_args(env, info, what, "fffisdffffffi", &q, &lq, &k, &lk, &v, &lv, &seg, &ls, dims, &rank, &scale, &o, &lo,
                            &lse, &ll, &dout, &l1, &dq, &l2, &dk, &l3, &dv, &l4, &qpos, &lp)
                : read_args(env, info, what, "fffisdffi", &q, &lq, &k, &lk, &v, &lv, &seg, &ls, dims, &rank, &scale, &o, &lo, &lse,
                            &ll, &qpos, &lp);
  if (!ok) return NULL;
  if (rank != 5 && rank != 6) FAIL("flashAttention expects dims [B, T, nH, nKv, d] or [B, Tq, nH, nKv, d, Tk]");
  c.B = dims[0], c.Tq = dims[1], c.nH = dims[2], c.nKv = dims[3], c.d = dims[4], c.Tk = rank == 6 ? dims[5] : dims[1];
  if (c.B < 1 || c.Tq < 1 || c.Tk < 1 || c.nKv < 1 || c.nH % c.nKv || c.d < 1) FAIL("flashAttention: bad dims");
  size_t nq = (size_t)(c.B * c.Tq * c.nH * c.d), nk = (size_t)(c.B * c.nKv * c.Tk * c.d), nl = (size_t)(c.B * c.nH * c.Tq);
  if (lq < nq || lk < nk || lv < nk || ls < (size_t)(c.B * c.Tk) || lo < nq || ll < nl ||
      (back && (l1 < nq || l2 < nq || l3 < nk || l4 < nk)) || (rank == 6 && lp < (size_t)(c.B * c.Tq)))
    FAIL("flashAttention: array too short for dims");
  if (rank == 6) {
    for (int64_t i = 0; i < c.B * c.Tq; i++)
      if (qpos[i] < 0 || qpos[i] >= c.Tk) FAIL("flashAttention: qpos must be in [0, Tk)");
    c.qpos = qpos;
  }
  c.q = q, c.k = k, c.v = v, c.seg = seg, c.scale = (float)scale;
  if (back) c.o = o, c.lse_in = lse, c.dout = dout, c.dq = dq, c.dk = dk, c.dv = dv;
  else c.out = o, c.lse = lse;
  int64_t *first = malloc(sizeof(int64_t) * (size_t)(c.B * c.Tk));
  if (!first || !first_positions(seg, c.B, c.Tk, first)) {
    free(first);
    FAIL("flashAttention: out of memory");
  }
  c.first = first;
  int configured = openblas_get_num_threads();
  openblas_set_num_threads(1);
  parallel_for_threads(c.B * c.nKv, configured, back ? flash_bwd_groups : flash_fwd_groups, &c);
  openblas_set_num_threads(configured);
  free(first);
  if (c.failed) FAIL("flashAttention: out of memory for a tile buffer");
  return NULL;
}

KERNEL(flash_attention) { return flash_common(env, info, 0); }
KERNEL(flash_attention_grad) { return flash_common(env, info, 1); }
