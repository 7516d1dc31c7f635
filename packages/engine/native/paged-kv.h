/*
 * A KV cache in fixed-size blocks (paged-attention.c): per layer a pool of blocks, each
 * [nKv, bs, d] keys (and one of values), held in segments of `segBlocks` blocks (Float32Arrays
 * the caller allocates; a pool grows by a segment, nothing is copied). Row b's token j (j from 0,
 * its first real token) sits in block table[b * tw + j / bs] at offset j % bs; block id k is
 * block k % segBlocks of segment k / segBlocks. Rows may share blocks (a GRPO group's prompt):
 * the caller gives each row its own block before writing into a shared one (copy-on-write).
 */
#ifndef RL2_PAGED_KV_H
#define RL2_PAGED_KV_H

#include "kernels.h"

/* Most segments a pool passes in one call. */
#define PAGED_MAX_SEGS 4096

struct paged_kv {
  const int32_t *table; /* [B, tw] block ids */
  const int32_t *lens;  /* [B] tokens each row holds before this call */
  int64_t bs, tw, seg_blocks, nseg;
  float *kseg[PAGED_MAX_SEGS], *vseg[PAGED_MAX_SEGS];
};

/* NULL, or what is wrong with the table and lengths for B rows of S new tokens after padLeft pad[b]
   (each row needs pad[b] < S and lens[b] + S - pad[b] <= tw * bs, its used blocks inside the pool) */
#define paged_check rl2_paged_check
const char *paged_check(const struct paged_kv *pg, int64_t B, int64_t S, const int32_t *pad);

/* Reads layer l's segments from the JS arrays kPools / vPools (each an array of nseg Float32Arrays of
   seg_blocks * nKv * bs * d floats) into pg; NULL, or what is wrong. */
#define paged_read_layer rl2_paged_read_layer
const char *paged_read_layer(napi_env env, napi_value kPools, napi_value vPools, uint32_t l, int64_t nKv, int64_t d,
                             struct paged_kv *pg);

/* Writes token t of row b (its s-th new one, s >= pad[b]) keys k / values v [nKv, d] into its block. */
#define paged_write rl2_paged_write
void paged_write(const struct paged_kv *pg, int64_t b, int64_t s, const int32_t *pad, const float *k, const float *v,
                 int64_t nKv, int64_t d);

/* Attention of B rows' S new tokens over q [B, S, nH * d] in place (output over q): token s >= pad[b] of
   row b attends to the row's tokens 0 .. lens[b] + s - pad[b]; a token s < pad[b] gets zeros. 0 when out
   of memory. */
#define paged_attend rl2_paged_attend
int paged_attend(const struct paged_kv *pg, float *q, const int32_t *pad, int64_t B, int64_t S, int64_t nH, int64_t nKv,
                 int64_t d);

#endif
