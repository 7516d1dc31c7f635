/* Transpose and the strided copy behind Slice, SplitV and Concat (4-byte elements, copied as bits). */
#include "kernels.h"

/*
 * transpose(x, shape, perm, out): out = x permuted, out.shape[d] = shape[perm[d]].
 * Works for any 4-byte element (Float32Array or Int32Array; both passed as float bits).
 */
KERNEL(transpose) {
  void *xp, *op;
  size_t lx, lo;
  napi_typedarray_type tx, to;
  int64_t shape[MAX_RANK], perm[MAX_RANK];
  int r, rp;
  if (!read_args(env, info, "transpose expects two Float32Arrays or two Int32Arrays", "wssw", &xp, &lx, &tx, shape, &r,
                 perm, &rp, &op, &lo, &to))
    return NULL;
  if (tx != to) FAIL("transpose expects two Float32Arrays or two Int32Arrays");
  if (r < 1 || rp != r) FAIL("transpose: shape and perm must match (rank 1..8)");
  int64_t in_strides[MAX_RANK], os[MAX_RANK], oshape[MAX_RANK], total = 1;
  in_strides[r - 1] = 1;
  for (int d = r - 2; d >= 0; d--) in_strides[d] = in_strides[d + 1] * shape[d + 1];
  for (int d = 0; d < r; d++) {
    if (perm[d] < 0 || perm[d] >= r) FAIL("transpose: perm entry out of range");
    oshape[d] = shape[perm[d]];
    os[d] = in_strides[perm[d]];
    total *= oshape[d];
  }
  if ((size_t)total > lx || (size_t)total > lo) FAIL("transpose: array too short for shape");
  if (total == 0) return NULL;
  const uint32_t *x = (const uint32_t *)xp;
  uint32_t *o = (uint32_t *)op;
  int64_t n = oshape[r - 1], sn = os[r - 1], rows = total / n, idx[MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; row++) {
    int64_t off = 0;
    for (int d = 0; d < r - 1; d++) off += idx[d] * os[d];
    uint32_t *orow = o + row * n;
    if (sn == 1) {
      memcpy(orow, x + off, sizeof(uint32_t) * (size_t)n);
    } else {
      for (int64_t j = 0; j < n; j++) orow[j] = x[off + j * sn];
    }
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}

/*
 * stridedCopy(x, xOffset, xStrides, out, outOffset, outStrides, shape): for every index i of
 * `shape`, out[outOffset + i·outStrides] = x[xOffset + i·xStrides]. 4-byte elements (two
 * Float32Arrays or two Int32Arrays). Slice, SplitV and Concat are all this one copy.
 */
KERNEL(strided_copy) {
  void *xp, *op;
  size_t lx, lo;
  napi_typedarray_type tx, to;
  int64_t xoff, ooff, xs[MAX_RANK], os[MAX_RANK], shape[MAX_RANK];
  int rx, ro, r;
  if (!read_args(env, info, "stridedCopy expects two Float32Arrays or two Int32Arrays", "wnswnss", &xp, &lx, &tx, &xoff, xs,
                 &rx, &op, &lo, &to, &ooff, os, &ro, shape, &r))
    return NULL;
  if (tx != to) FAIL("stridedCopy expects two Float32Arrays or two Int32Arrays");
  if (r < 1 || rx != r || ro != r) FAIL("stridedCopy: strides and shape must be Int32Array of the same rank (1..8)");
  int64_t total = 1, xmax = xoff, omax = ooff;
  for (int d = 0; d < r; d++) {
    if (shape[d] < 0 || xs[d] < 0 || os[d] < 0) FAIL("stridedCopy: negative shape or stride");
    total *= shape[d];
    if (shape[d] > 0) {
      xmax += xs[d] * (shape[d] - 1);
      omax += os[d] * (shape[d] - 1);
    }
  }
  if (total == 0) return NULL;
  if (xoff < 0 || ooff < 0 || (size_t)xmax >= lx || (size_t)omax >= lo) FAIL("stridedCopy: index out of range");
  const uint32_t *x = (const uint32_t *)xp;
  uint32_t *o = (uint32_t *)op;
  int64_t n = shape[r - 1], rows = total / n, idx[MAX_RANK] = {0};
  for (int64_t row = 0; row < rows; row++) {
    int64_t xo = xoff, oo = ooff;
    for (int d = 0; d < r - 1; d++) {
      xo += idx[d] * xs[d];
      oo += idx[d] * os[d];
    }
    if (xs[r - 1] == 1 && os[r - 1] == 1) {
      memcpy(o + oo, x + xo, sizeof(uint32_t) * (size_t)n);
    } else {
      for (int64_t j = 0; j < n; j++) o[oo + j * os[r - 1]] = x[xo + j * xs[r - 1]];
    }
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}
