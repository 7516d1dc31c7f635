/* Gather rows by index, and the unsorted segment sum (the gather's gradient). */
#include "kernels.h"

/*
 * gather(x, outer, n, inner, indices, out): x viewed as [outer, n, inner];
 * out[o, i, :] = x[o, indices[i], :]. Returns -1 when all indices are in [0, n), else the
 * position of the first bad index (out is then incomplete).
 */
KERNEL(gather) {
  float *x, *o;
  int32_t *ix;
  size_t lx, lo, li;
  int64_t outer, n, inner;
  if (!read_args(env, info, "gather expects Float32Array x, Int32Array indices, Float32Array out", "fnnnif", &x, &lx,
                 &outer, &n, &inner, &ix, &li, &o, &lo))
    return NULL;
  if (outer < 0 || n < 0 || inner < 0 || (size_t)(outer * n * inner) > lx ||
      (size_t)(outer * (int64_t)li * inner) > lo)
    FAIL("gather: array too short for [outer, n, inner]");
  int64_t bad = -1;
  for (int64_t a = 0; a < outer && bad < 0; a++) {
    for (int64_t i = 0; i < (int64_t)li; i++) {
      int64_t k = ix[i];
      if (k < 0 || k >= n) {
        bad = i;
        break;
      }
      memcpy(o + (a * (int64_t)li + i) * inner, x + (a * n + k) * inner, sizeof(float) * (size_t)inner);
    }
  }
  return int64_result(env, bad);
}

/*
 * segmentSum(x, ids, numSegments, inner, out): x viewed as [ids.length, inner];
 * out[s, :] = sum of x[i, :] over i with ids[i] == s (ids outside [0, numSegments) are dropped,
 * like TensorFlow's UnsortedSegmentSum). out must hold numSegments*inner zeros.
 */
KERNEL(segment_sum) {
  float *x, *o;
  int32_t *ids;
  size_t lx, li, lo;
  int64_t segs, inner;
  if (!read_args(env, info, "segmentSum expects Float32Array x, Int32Array ids, Float32Array out", "finnf", &x, &lx, &ids,
                 &li, &segs, &inner, &o, &lo))
    return NULL;
  if (segs < 0 || inner < 0 || (size_t)((int64_t)li * inner) > lx || (size_t)(segs * inner) > lo)
    FAIL("segmentSum: array too short");
  for (int64_t i = 0; i < (int64_t)li; i++) {
    int64_t s = ids[i];
    if (s < 0 || s >= segs) continue;
    float *orow = o + s * inner;
    const float *xr = x + i * inner;
    for (int64_t j = 0; j < inner; j++) orow[j] += xr[j];
  }
  return NULL;
}
