/* The bfloat16 dot-product tiles of decode-linear.c for many batch rows (LANE_MIN_ROWS and more:
 * a batch-64 step, a prefill): the lanes run along the batch instead of along k. x is rounded to
 * bfloat16 as for decode-linear-dot.h and laid out in groups of 16 rows, [group][k / 2][16 rows]
 * of (k, k + 1) pairs, so one vdpbf16ps multiplies a pair of one W row, broadcast, into 16 rows
 * at once. A tile's 6 W rows x 4 groups (64 rows) sum in 24 registers whose lanes are finished
 * outputs: no sum across lanes at the end (about a sixth of the row-along-k tiles' time at K = 1024),
 * and each W element is read once per 64 rows. Included by decode-linear.c after decode-linear-dot.h. */

#define LANE_J 6         /* W rows per tile */
#define LANE_G 4         /* groups of 16 batch rows per tile */
#define LANE_BLOCK_J 48  /* W rows per thread task (a multiple of LANE_J) */
#define LANE_MIN_ROWS 32 /* fewer rows take the row-along-k tiles (a group would be mostly padding) */

/* 32-bit words from one group of 16 rows to the next: its pairs and one 64-byte line more, so the
   groups' rows read side by side do not fall in the same L1 sets (a stride of whole 4 KiB pages would) */
static inline int64_t group_words(int64_t in) { return ((in + 1) / 2 + 1) * 16; }

/* x [rows, in] rounded to bfloat16 into `out` as [ceil(rows / 16)][group_words(in)] words, each
   group [ceil(in / 2)][16] pairs, the padding (rows past the last, the odd column's partner) zero;
   `bits` holds rows * in halves */
static void pack_lanes(const float *x, int64_t rows, int64_t in, uint16_t *bits, uint32_t *out) {
  int64_t pairs = (in + 1) / 2, full = in / 2;
  bf16_bits(x, rows * in, bits);
  for (int64_t g = 0; g * 16 < rows; g++) { /* written in order, the group's 16 rows read side by side */
    int64_t n = rows - g * 16 < 16 ? rows - g * 16 : 16;
    const uint16_t *rg = bits + g * 16 * in;
    uint32_t *o = out + g * group_words(in);
    for (int64_t p = 0; p < full; p++, o += 16) {
      for (int64_t l = 0; l < n; l++) o[l] = (uint32_t)rg[l * in + 2 * p] | (uint32_t)rg[l * in + 2 * p + 1] << 16;
      for (int64_t l = n; l < 16; l++) o[l] = 0;
    }
    if (full < pairs) {
      for (int64_t l = 0; l < 16; l++) o[l] = l < n ? rg[l * in + in - 1] : 0;
    }
  }
}

/* W row j's pair p as one 32-bit word (the odd last column paired with zero) */
static inline uint32_t w_pair(const uint16_t *w, int64_t in, int64_t j, int64_t p) {
  const uint16_t *q = w + j * in + 2 * p;
  return 2 * p + 1 < in ? (uint32_t)q[0] | (uint32_t)q[1] << 16 : q[0];
}

/* nj W rows from j against groups g .. g + ng - 1 (rows 16 g ..), into out [nj][16 LANE_G] (W row, batch row) */
DOT_ATTR inline __attribute__((always_inline)) void lane_tile_at(const struct skinny *c, int64_t j, const int nj, int64_t g,
                                                                 const int ng, float *out) {
  __m512 acc[LANE_J][LANE_G];
  for (int a = 0; a < LANE_J; a++)
    for (int b = 0; b < LANE_G; b++) acc[a][b] = _mm512_setzero_ps();
  const int64_t in = c->in, pairs = (in + 1) / 2, full = in / 2;
  const uint16_t *w = (const uint16_t *)c->w;
  const int64_t gw = group_words(in);
  const uint32_t *x = c->x_lanes + g * gw;
  /* W is read once, so the next tile's rows are fetched while this one runs: a 64-byte line of each
     per 16 pairs (the next block's first tile too; a thread's block may follow another's) */
  const int64_t next = j + LANE_J, ahead = next < c->out ? (c->out - next < LANE_J ? c->out - next : LANE_J) : 0;
  for (int64_t p0 = 0; p0 < full; p0 += 16) {
    for (int64_t a = 0; a < ahead; a++) _mm_prefetch((const char *)(w + (next + a) * in + 2 * p0), _MM_HINT_T0);
    for (int64_t p = p0; p < (p0 + 16 < full ? p0 + 16 : full); p++) {
      __m512i xv[LANE_G];
      for (int b = 0; b < ng; b++) xv[b] = _mm512_loadu_si512((const void *)(x + b * gw + p * 16));
      for (int a = 0; a < nj; a++) {
        uint32_t pair;
        memcpy(&pair, w + (j + a) * in + 2 * p, sizeof pair);
        __m512bh wb = (__m512bh)_mm512_set1_epi32((int)pair);
        for (int b = 0; b < ng; b++) acc[a][b] = _mm512_dpbf16_ps(acc[a][b], wb, (__m512bh)xv[b]);
      }
    }
  }
  if (full < pairs) /* the odd last column */
    for (int a = 0; a < nj; a++) {
      __m512bh wb = (__m512bh)_mm512_set1_epi32((int)w_pair(w, in, j + a, full));
      for (int b = 0; b < ng; b++)
        acc[a][b] = _mm512_dpbf16_ps(acc[a][b], wb, (__m512bh)_mm512_loadu_si512((const void *)(x + b * gw + full * 16)));
    }
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < ng; b++) _mm512_storeu_ps(out + a * 16 * LANE_G + b * 16, acc[a][b]);
}

/* full tiles with constant sizes (every accumulator stays in a register), the edges general */
DOT_ATTR void lane_tile(const struct skinny *c, int64_t j, int nj, int64_t g, int ng, float *out) {
  if (nj == LANE_J && ng == 4) lane_tile_at(c, j, LANE_J, g, 4, out);
  else if (nj == LANE_J && ng == 3) lane_tile_at(c, j, LANE_J, g, 3, out);
  else if (nj == LANE_J && ng == 2) lane_tile_at(c, j, LANE_J, g, 2, out);
  else if (nj == LANE_J && ng == 1) lane_tile_at(c, j, LANE_J, g, 1, out);
  else lane_tile_at(c, j, nj, g, ng, out);
}

/* blocks b0 .. b1 - 1 of LANE_BLOCK_J W rows, each against every group of rows, LANE_G at a time.
   The tiles write a block's outputs W row by W row into `t`, and they go to y [rows, out] a row at a
   time after the block: y's rows, a multiple of 4 KiB apart in the usual widths, share their L1
   sets, so a tile's 16 * LANE_G rows stored straight into y stall on evictions. */
static void lane_blocks(const struct skinny *c, int64_t b0, int64_t b1) {
  float t[LANE_BLOCK_J * 16 * LANE_G];
  int64_t groups = (c->rows + 15) / 16;
  for (int64_t b = b0; b < b1; b++) {
    int64_t j0 = b * LANE_BLOCK_J, j1 = j0 + LANE_BLOCK_J < c->out ? j0 + LANE_BLOCK_J : c->out;
    for (int64_t g = 0; g < groups; g += LANE_G) {
      int ng = groups - g < LANE_G ? (int)(groups - g) : LANE_G;
      for (int64_t j = j0; j < j1; j += LANE_J)
        lane_tile(c, j, j1 - j < LANE_J ? (int)(j1 - j) : LANE_J, g, ng, t + (j - j0) * 16 * LANE_G);
      int64_t r1 = (g + ng) * 16 < c->rows ? (g + ng) * 16 : c->rows;
      for (int64_t r = g * 16; r < r1; r++)
        for (int64_t j = j0; j < j1; j++) store(c, j, r, t[(j - j0) * 16 * LANE_G + r - g * 16]);
    }
  }
}
