/* The new tokens' attention and cache writes over a KV cache in blocks (paged-kv.h), as the contiguous
   cache's in fused-decode.c: a decode step's scores, softmax and sums in the same order (the same
   values bit for bit), a prefill's tiles one block of keys wide (vLLM's PagedAttention, Kwon et al.
   2023, https://arxiv.org/abs/2309.06180, for the layout). */
#include "paged-kv.h"

/* Multiply-adds per call below which one thread does the one-token attention / the prefill one. */
#define PAGED_THREAD_WORK (1 << 15)
#define PAGED_PREFILL_THREAD_WORK (1 << 22)
/* Query tile of the S > 1 attention. */
#define PAGED_QUERY_TILE 64

struct paged_attn {
  const struct paged_kv *pg;
  float *q; /* [B, S, nH*d] after norm + rope; overwritten by the output */
  const int32_t *pad;
  int64_t S, nH, nKv, d, most; /* most: the longest row's keys */
  float scale;
  volatile int failed;
};

/* keys (v 0) or values (v 1) [bs, d] of kv head h in block jb of row b */
static const float *block_of(const struct paged_kv *pg, int64_t b, int64_t jb, int64_t h, int64_t nKv, int64_t d, int v) {
  int64_t id = pg->table[b * pg->tw + jb];
  const float *seg = (v ? pg->vseg : pg->kseg)[id / pg->seg_blocks];
  return seg + ((id % pg->seg_blocks) * nKv + h) * pg->bs * d;
}

const char *paged_check(const struct paged_kv *pg, int64_t B, int64_t S, const int32_t *pad) {
  if (pg->bs < 1 || pg->tw < 1 || pg->seg_blocks < 1 || pg->nseg < 1)
    return "bad paged dims (need blockSize, tableWidth, segmentBlocks >= 1 and a segment)";
  int64_t blocks = pg->nseg * pg->seg_blocks;
  for (int64_t b = 0; b < B; b++) {
    if (pad[b] < 0 || pad[b] >= S) return "padLeft must be in [0, S) for a paged cache";
    int64_t held = (int64_t)pg->lens[b] + S - pad[b];
    if (pg->lens[b] < 0 || held > pg->tw * pg->bs) return "a row's tokens exceed its block table (tableWidth * blockSize)";
    for (int64_t jb = 0; jb < (held + pg->bs - 1) / pg->bs; jb++) {
      int32_t id = pg->table[b * pg->tw + jb];
      if (id < 0 || id >= blocks) return "a block id of a row's tokens is outside the pool's segments";
    }
  }
  return NULL;
}

/* element i of JS array arr as a Float32Array of at least n floats; 0 when not */
static int segment(napi_env env, napi_value arr, uint32_t i, size_t n, float **out) {
  napi_value v;
  napi_typedarray_type t;
  size_t len;
  void *p;
  if (napi_get_element(env, arr, i, &v) != napi_ok || napi_get_typedarray_info(env, v, &t, &len, &p, NULL, NULL) != napi_ok ||
      t != napi_float32_array || len < n)
    return 0;
  *out = (float *)p;
  return 1;
}

const char *paged_read_layer(napi_env env, napi_value kPools, napi_value vPools, uint32_t l, int64_t nKv, int64_t d,
                             struct paged_kv *pg) {
  napi_value ka, va;
  uint32_t nk = 0, nv = 0;
  if (napi_get_element(env, kPools, l, &ka) != napi_ok || napi_get_element(env, vPools, l, &va) != napi_ok ||
      napi_get_array_length(env, ka, &nk) != napi_ok || napi_get_array_length(env, va, &nv) != napi_ok)
    return "a paged cache's kCaches[l] / vCaches[l] must be arrays of segments";
  if (nk != nv || nk < 1 || nk > PAGED_MAX_SEGS || (l > 0 && (int64_t)nk != pg->nseg))
    return "every layer's key and value pools must have the same number of segments (1 to 4096)";
  pg->nseg = nk;
  size_t n = (size_t)(pg->seg_blocks * nKv * pg->bs * d);
  for (uint32_t i = 0; i < nk; i++)
    if (!segment(env, ka, i, n, &pg->kseg[i]) || !segment(env, va, i, n, &pg->vseg[i]))
      return "a pool segment must be a Float32Array of segmentBlocks * nKv * blockSize * d floats";
  return NULL;
}

void paged_write(const struct paged_kv *pg, int64_t b, int64_t s, const int32_t *pad, const float *k, const float *v,
                 int64_t nKv, int64_t d) {
  int64_t j = pg->lens[b] + s - pad[b], id = pg->table[b * pg->tw + j / pg->bs];
  size_t off = (size_t)((id % pg->seg_blocks) * nKv * pg->bs + j % pg->bs) * (size_t)d;
  float *ks = pg->kseg[id / pg->seg_blocks] + off, *vs = pg->vseg[id / pg->seg_blocks] + off;
  for (int64_t h = 0; h < nKv; h++) {
    memcpy(ks + h * pg->bs * d, k + h * d, sizeof(float) * (size_t)d);
    memcpy(vs + h * pg->bs * d, v + h * d, sizeof(float) * (size_t)d);
  }
}

/* S = 1: each (row, kv head) group reads its blocks once for all its query heads */
static void decode_groups(void *vctx, int64_t g0, int64_t g1) {
  struct paged_attn *c = (struct paged_attn *)vctx;
  const struct paged_kv *pg = c->pg;
  int64_t rep = c->nH / c->nKv, d = c->d, ldq = c->nH * d, bs = pg->bs;
  float *p = rl2_scratch(SCRATCH_ATTN, (size_t)(rep * c->most));
  if (!p) {
    c->failed = 1;
    return;
  }
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv, n = pg->lens[b] + 1;
    float *q = c->q + b * ldq + kvh * rep * d;
    for (int64_t j0 = 0; j0 < n; j0 += bs) {
      const float *K = block_of(pg, b, j0 / bs, kvh, c->nKv, d, 0);
      for (int64_t j = 0; j < bs && j0 + j < n; j++)
        for (int64_t r = 0; r < rep; r++) p[r * n + j0 + j] = dot_lanes(q + r * d, K + j * d, d) * c->scale;
    }
    for (int64_t r = 0; r < rep; r++) {
      float *pr = p + r * n;
      float m = row_max(pr, n);
      exp_shifted(pr, n, m, 1.0f, pr);
      float inv = 1.0f / row_sum(pr, n);
      for (int64_t j = 0; j < n; j++) pr[j] *= inv;
    }
    memset(q, 0, sizeof(float) * (size_t)(rep * d));
    for (int64_t j0 = 0; j0 < n; j0 += bs) {
      const float *V = block_of(pg, b, j0 / bs, kvh, c->nKv, d, 1);
      for (int64_t j = 0; j < bs && j0 + j < n; j++)
        for (int64_t r = 0; r < rep; r++) axpy(q + r * d, p[r * n + j0 + j], V + j * d, d);
    }
  }
}

/* one query tile (queries i0 .. i0+tq-1 of Q, row stride ldq) of row b against its blocks, online softmax */
static void prefill_tile(const struct paged_attn *c, int64_t b, int64_t kvh, float *Q, int64_t i0, int64_t tq, float *s) {
  const struct paged_kv *pg = c->pg;
  int64_t d = c->d, ldq = c->nH * d, bs = pg->bs, at = pg->lens[b] - c->pad[b]; /* query i sits at key at + i */
  int64_t end = at + i0 + tq;                                                   /* keys < end */
  float *acc = s + PAGED_QUERY_TILE * bs, *m = acc + PAGED_QUERY_TILE * d, *l = m + PAGED_QUERY_TILE;
  for (int64_t i = 0; i < tq; i++) m[i] = -INFINITY, l[i] = 0;
  memset(acc, 0, sizeof(float) * (size_t)(tq * d));
  for (int64_t j0 = 0; j0 < end; j0 += bs) {
    int64_t tk = end - j0 < bs ? end - j0 : bs;
    const float *K = block_of(pg, b, j0 / bs, kvh, c->nKv, d, 0), *V = block_of(pg, b, j0 / bs, kvh, c->nKv, d, 1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tq, (int)tk, (int)d, c->scale, Q + i0 * ldq, (int)ldq, K, (int)d,
                0.0f, s, (int)bs);
    for (int64_t i = 0; i < tq; i++) {
      float *row = s + i * bs;
      int64_t last = at + i0 + i - j0; /* keys j0 .. j0+last of this block are seen */
      for (int64_t j = last + 1 < 0 ? 0 : last + 1; j < tk; j++) row[j] = -INFINITY;
      if (last >= 0) online_softmax_row(row, tk, &m[i], &l[i], acc + i * d, d);
      else
        memset(row, 0, sizeof(float) * (size_t)tk); /* a query before this block adds nothing */
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tq, (int)d, (int)tk, 1.0f, s, (int)bs, V, (int)d, 1.0f, acc,
                (int)d);
  }
  for (int64_t i = 0; i < tq; i++) {
    float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
    for (int64_t t = 0; t < d; t++) Q[(i0 + i) * ldq + t] = acc[i * d + t] * inv;
  }
}

/* S > 1: per (row, kv head) group, each query head's tiles from padLeft[b] on; padding queries get zeros */
static void prefill_groups(void *vctx, int64_t g0, int64_t g1) {
  struct paged_attn *c = (struct paged_attn *)vctx;
  int64_t rep = c->nH / c->nKv, d = c->d, S = c->S, ldq = c->nH * d, bs = c->pg->bs;
  float *s = malloc(sizeof(float) * (size_t)(PAGED_QUERY_TILE * (bs + d + 2)));
  if (!s) {
    c->failed = 1;
    return;
  }
  for (int64_t g = g0; g < g1; g++) {
    int64_t b = g / c->nKv, kvh = g % c->nKv, pad = c->pad[b];
    for (int64_t r = 0; r < rep; r++) {
      float *Q = c->q + b * S * ldq + (kvh * rep + r) * d;
      for (int64_t i = 0; i < pad; i++) memset(Q + i * ldq, 0, sizeof(float) * (size_t)d);
      for (int64_t i0 = pad; i0 < S; i0 += PAGED_QUERY_TILE)
        prefill_tile(c, b, kvh, Q, i0, S - i0 < PAGED_QUERY_TILE ? S - i0 : PAGED_QUERY_TILE, s);
    }
  }
  free(s);
}

int paged_attend(const struct paged_kv *pg, float *q, const int32_t *pad, int64_t B, int64_t S, int64_t nH, int64_t nKv,
                 int64_t d) {
  struct paged_attn a = {pg, q, pad, S, nH, nKv, d, 0, 1.0f / sqrtf((float)d), 0};
  int64_t keys = 0;
  for (int64_t b = 0; b < B; b++) {
    int64_t n = pg->lens[b] + S - pad[b];
    keys += n;
    if (n > a.most) a.most = n;
  }
  int threads = openblas_get_num_threads();
  if (S == 1) {
    parallel_for_threads(B * nKv, keys * nH * d >= PAGED_THREAD_WORK ? threads : 1, decode_groups, &a);
  } else {
    /* each group's tiles run single-threaded sgemm, the groups split over the threads */
    openblas_set_num_threads(1);
    parallel_for_threads(B * nKv, keys * S * nH * d >= PAGED_PREFILL_THREAD_WORK ? threads : 1, prefill_groups, &a);
    openblas_set_num_threads(threads);
  }
  return !a.failed;
}
