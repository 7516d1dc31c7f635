/* The register tiles of decode-linear.c for one x86 vector width, included once per ISA after
 * defining TILE_ATTR (the target attribute), VEC (the float vector), LANES, SUFFIX (names end in
 * it), VLOAD / VZERO / VADD / VFMA / VHSUM, and LOAD_BF16 / LOAD_F16 (16-bit weights widened in registers).
 *
 * Each step of a tile's loop takes 2 * LANES columns of every W row in two vectors (halves).
 * float32 and float16: columns k .. k+LANES-1 and the next LANES. bfloat16: one load of
 * 2 * LANES values, whose 32-bit lanes each hold two of them, so a shift left by 16 gives the
 * even columns and masking the low half gives the odd ones (no widening shuffle); the batch
 * rows are read from x_bf16 (see decode-linear.c), the same values with each block of 2 * LANES
 * columns stored evens first, then odds, so both halves meet their own x values. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define NAME(n) CAT(n, SUFFIX)

/* the two halves of 2 * LANES weights of `dtype` at element i of w */
TILE_ATTR inline __attribute__((always_inline)) void NAME(load_halves)(const void *w, int dtype, int64_t i, VEC *h0, VEC *h1) {
  if (dtype == RL2_WT_F32) {
    *h0 = VLOAD((const float *)w + i);
    *h1 = VLOAD((const float *)w + i + LANES);
  } else if (dtype == RL2_WT_BF16) {
    LOAD_BF16((const uint16_t *)w + i, h0, h1);
  } else {
    LOAD_F16((const uint16_t *)w + i, h0, h1);
  }
}

/* nj W rows from j against nr batch rows from r. `split`: even and odd halves in separate
 * accumulators (for one batch row, so eight independent FMA chains hide the FMA latency).
 * `prefetch`: this pass is the first over these W rows (later batch rows find them in L1), so it
 * prefetches the next tile's rows (each W row is its own stream; a row of 1024 floats is a
 * 4 KiB page, where hardware prefetchers stop). */
TILE_ATTR inline __attribute__((always_inline)) void NAME(tile_at)(const struct skinny *c, const int dtype, int64_t j,
                                                                  const int nj, int64_t r, const int nr, const int split,
                                                                  int prefetch) {
  VEC acc[TILE_J][TILE_R][2];
  for (int a = 0; a < TILE_J; a++)
    for (int b = 0; b < TILE_R; b++) acc[a][b][0] = acc[a][b][1] = VZERO();
  const int64_t in = c->in, step = 2 * LANES, kv = in / step * step;
  const size_t elem = dtype == RL2_WT_F32 ? 4 : 2;
  const float *x = (dtype == RL2_WT_BF16 ? c->x_bf16 : c->x) + r * in;
  const int64_t next = j + TILE_J < c->out ? j + TILE_J : -1;
  for (int64_t k = 0; k < kv; k += step) {
    for (int a = 0; a < nj; a++) {
      VEC h0, h1;
      NAME(load_halves)(c->w, dtype, (j + a) * in + k, &h0, &h1);
      if (prefetch && next >= 0 && next + a < c->out && ((size_t)k * elem) % 64 == 0) {
        const char *p = (const char *)c->w + (size_t)((next + a) * in + k) * elem;
        for (size_t o = 0; o < step * elem; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
      }
      for (int b = 0; b < nr; b++) {
        acc[a][b][0] = VFMA(h0, VLOAD(x + b * in + k), acc[a][b][0]);
        acc[a][b][split] = VFMA(h1, VLOAD(x + b * in + k + LANES), acc[a][b][split]);
      }
    }
  }
  for (int a = 0; a < nj; a++)
    for (int b = 0; b < nr; b++) {
      VEC s = split ? VADD(acc[a][b][0], acc[a][b][1]) : acc[a][b][0];
      store(c, j + a, r + b, VHSUM(s) + (kv < in ? dot_from(c, j + a, r + b, kv) : 0.0f));
    }
}

/* one dtype's tiles: full ones with constant sizes (every accumulator stays in a register) */
#define TILES_OF(dt, tag)                                                                                                  \
  TILE_ATTR void NAME(CAT(tile_, tag))(const struct skinny *c, int64_t j, int nj, int64_t r, int nr, int prefetch) {     \
    if (nj == TILE_J && nr == 1) NAME(tile_at)(c, dt, j, TILE_J, r, 1, 1, prefetch);                                     \
    else if (nj == TILE_J && nr == 2) NAME(tile_at)(c, dt, j, TILE_J, r, 2, 0, prefetch);                                \
    else if (nj == TILE_J && nr == 3) NAME(tile_at)(c, dt, j, TILE_J, r, 3, 0, prefetch);                                \
    else NAME(tile_at)(c, dt, j, nj, r, nr, 0, prefetch);                                                               \
  }
TILES_OF(RL2_WT_F32, f32)
TILES_OF(RL2_WT_BF16, bf16)
TILES_OF(RL2_WT_F16, f16)
#undef TILES_OF

TILE_ATTR void NAME(tile)(const struct skinny *c, int64_t j, int nj, int64_t r, int nr, int prefetch) {
  if (c->dtype == RL2_WT_F32) NAME(tile_f32)(c, j, nj, r, nr, prefetch);
  else if (c->dtype == RL2_WT_BF16) NAME(tile_bf16)(c, j, nj, r, nr, prefetch);
  else NAME(tile_f16)(c, j, nj, r, nr, prefetch);
}

#undef NAME
#undef CAT
#undef CAT_
