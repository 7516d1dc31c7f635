/* The bfloat16 dot-product tiles of decode-linear.c (AVX512_BF16's vdpbf16ps), for bfloat16 W:
 * W is read as stored and x is rounded to bfloat16 (nearest even) once per product, so one
 * instruction takes 32 products of pairs into 16 float32 sums: twice the multiply-adds of a
 * float32 FMA, and no widening of W. This is what llama.cpp's BF16 and GPUs do; the price is x's
 * rounding (relative 2^-9 per element, by half-bits.c's bf16_bits), the float32 accumulation is
 * kept. Lanes run along k; a tile's 4 W rows x up to DOT_R batch rows sum in 24 registers, added
 * across lanes four at a time at the end. Included by decode-linear.c after struct skinny and store(). */

#define DOT_R 6
#define DOT_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static

/* [sum of a0's lanes, a1's, a2's, a3's] */
DOT_ATTR inline __m128 sum4_lanes(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
  __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
  __m512d d01 = _mm512_castps_pd(s01), d23 = _mm512_castps_pd(s23);
  __m512 s = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(d01, d23)), _mm512_castpd_ps(_mm512_unpackhi_pd(d01, d23)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* nj W rows from j against nr batch rows from r; `prefetch` as in decode-linear-tile.h (one
   64-byte line of each next W row per 32 columns) */
DOT_ATTR inline __attribute__((always_inline)) void dot_tile_at(const struct skinny *c, int64_t j, const int nj, int64_t r,
                                                                const int nr, int prefetch) {
  __m512 acc[TILE_J][DOT_R];
  for (int a = 0; a < TILE_J; a++)
    for (int b = 0; b < DOT_R; b++) acc[a][b] = _mm512_setzero_ps();
  const int64_t in = c->in;
  const uint16_t *w = (const uint16_t *)c->w + j * in, *x = c->x_dot + r * in;
  const int ahead = prefetch && j + TILE_J < c->out ? (int)(c->out - j - TILE_J < TILE_J ? c->out - j - TILE_J : TILE_J) : 0;
  int64_t k = 0;
  for (; k + 32 <= in; k += 32) {
    __m512i wv[TILE_J];
    for (int a = 0; a < nj; a++) wv[a] = _mm512_loadu_si512((const void *)(w + a * in + k));
    for (int a = 0; a < ahead; a++) _mm_prefetch((const char *)(w + (TILE_J + a) * in + k), _MM_HINT_T0);
    for (int b = 0; b < nr; b++) {
      __m512i xv = _mm512_loadu_si512((const void *)(x + b * in + k));
      for (int a = 0; a < nj; a++) acc[a][b] = _mm512_dpbf16_ps(acc[a][b], (__m512bh)wv[a], (__m512bh)xv);
    }
  }
  if (k < in) { /* the last in - k < 32 columns, the rest of both vectors zero */
    __mmask32 m = (__mmask32)((1ull << (in - k)) - 1);
    __m512i wv[TILE_J];
    for (int a = 0; a < nj; a++) wv[a] = _mm512_maskz_loadu_epi16(m, (const void *)(w + a * in + k));
    for (int b = 0; b < nr; b++) {
      __m512i xv = _mm512_maskz_loadu_epi16(m, (const void *)(x + b * in + k));
      for (int a = 0; a < nj; a++) acc[a][b] = _mm512_dpbf16_ps(acc[a][b], (__m512bh)wv[a], (__m512bh)xv);
    }
  }
  for (int b = 0; b < nr; b++) {
    float s[4];
    _mm_storeu_ps(s, sum4_lanes(acc[0][b], acc[1][b], acc[2][b], acc[3][b]));
    for (int a = 0; a < nj; a++) store(c, j + a, r + b, s[a]);
  }
}

/* full tiles with constant sizes (every accumulator stays in a register), the edges general */
DOT_ATTR void tile_dot(const struct skinny *c, int64_t j, int nj, int64_t r, int nr, int prefetch) {
  if (nj == TILE_J && nr == 6) dot_tile_at(c, j, TILE_J, r, 6, prefetch);
  else if (nj == TILE_J && nr == 5) dot_tile_at(c, j, TILE_J, r, 5, prefetch);
  else if (nj == TILE_J && nr == 4) dot_tile_at(c, j, TILE_J, r, 4, prefetch);
  else if (nj == TILE_J && nr == 3) dot_tile_at(c, j, TILE_J, r, 3, prefetch);
  else if (nj == TILE_J && nr == 2) dot_tile_at(c, j, TILE_J, r, 2, prefetch);
  else if (nj == TILE_J && nr == 1) dot_tile_at(c, j, TILE_J, r, 1, prefetch);
  else dot_tile_at(c, j, nj, r, nr, prefetch);
}
