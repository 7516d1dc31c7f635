/* Attention per (sequence, kv head) group, forward and backward (P recomputed, nothing [S, L] kept). */
#include "kernels.h"

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
  struct attn_ctx c;
  memset(&c, 0, sizeof(c));
  int64_t dims[MAX_RANK];
  int rank;
  double scale = 1;
  size_t lq, lk, lv, lm, lo, l1 = 0, l2 = 0, l3 = 0;
  float *q, *k, *v, *m, *o, *dq = NULL, *dk = NULL, *dv = NULL;
  if (!read_args(env, info, "attention expects Float32Array q, k, v, mask, Int32Array dims[7], scale, Float32Array out/dout",
                 back ? "ffffsdffff" : "ffffsdf", &q, &lq, &k, &lk, &v, &lv, &m, &lm, dims, &rank, &scale, &o, &lo, &dq, &l1,
                 &dk, &l2, &dv, &l3))
    return NULL;
  if (rank != 7) FAIL("attention expects Float32Array q, k, v, mask, Int32Array dims[7], scale, Float32Array out/dout");
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

KERNEL(attention) { return attention_common(env, info, 0); }
KERNEL(attention_grad) { return attention_common(env, info, 1); }
