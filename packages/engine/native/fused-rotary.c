/* RoPE, rotate-half layout, and its transpose (the backward) in one pass. */
#include "kernels.h"

/*
 * rotary(x [n, heads, d], cos [n, d], sin [n, d], n, heads, d, backward, out): RoPE with
 * rotate_half (HF layout). Forward out = x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1].
 * Backward (the transpose): dx1 = dy1 c1 + dy2 s2, dx2 = dy2 c2 - dy1 s1.
 */
KERNEL(rotary) {
  float *x, *cs, *sn, *o;
  size_t lx, lc, ls, lo;
  int64_t n, heads, d;
  int back;
  if (!read_args(env, info, "rotary expects Float32Array x, cos, sin, out", "fffnnnbf", &x, &lx, &cs, &lc, &sn, &ls, &n,
                 &heads, &d, &back, &o, &lo))
    return NULL;
  if (n < 0 || heads < 1 || d < 2 || d % 2 || (size_t)(n * heads * d) > lx || (size_t)(n * heads * d) > lo ||
      (size_t)(n * d) > lc || (size_t)(n * d) > ls)
    FAIL("rotary: array too short for [n, heads, d]");
  int64_t half = d / 2;
  for (int64_t t = 0; t < n; t++) {
    const float *c = cs + t * d, *s = sn + t * d;
    for (int64_t hh = 0; hh < heads; hh++) {
      const float *xr = x + (t * heads + hh) * d;
      float *orow = o + (t * heads + hh) * d;
      for (int64_t j = 0; j < half; j++) {
        float a = xr[j], b = xr[j + half];
        if (back) {
          orow[j] = a * c[j] + b * s[j + half];
          orow[j + half] = b * c[j + half] - a * s[j];
        } else {
          orow[j] = a * c[j] - b * s[j];
          orow[j + half] = b * c[j + half] + a * s[j + half];
        }
      }
    }
  }
  return NULL;
}
