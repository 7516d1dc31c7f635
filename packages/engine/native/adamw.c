/* One AdamW step per parameter: m, v and the parameter in one pass. */
#include "kernels.h"

/*
 * adamw(p, g, m, v, hp Float32Array [lr, b1, b2, eps, wd, c1, c2, (s)], p', m', v'): one AdamW step
 * (Loshchilov & Hutter 2019) elementwise on the gradient s g (s: the clipping factor, 1 when hp has 7
 * values): m' = b1 m + (1-b1) s g, v' = b2 v + (1-b2) (s g)^2,
 * p' = p (1 - lr wd) - lr (m'/c1) / (sqrt(v'/c2) + eps), c1/c2 the bias corrections.
 */
struct adam_ctx {
  const float *p, *g, *m, *v;
  float *po, *mo, *vo;
  float lr, b1, b2, eps, wd, c1, c2, scale;
};

HOT static void adamw_range(void *vctx, int64_t i0, int64_t i1) {
  const struct adam_ctx *c = (const struct adam_ctx *)vctx;
  float decay = 1.0f - c->lr * c->wd, ic1 = 1.0f / c->c1, ic2 = 1.0f / c->c2;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i] * c->scale;
    float m = c->b1 * c->m[i] + (1.0f - c->b1) * g;
    float v = c->b2 * c->v[i] + (1.0f - c->b2) * g * g;
    c->mo[i] = m;
    c->vo[i] = v;
    c->po[i] = c->p[i] * decay - c->lr * (m * ic1) / (sqrtf(v * ic2) + c->eps);
  }
}

KERNEL(adamw) {
  float *a[8];
  size_t len[8];
  if (!read_args(env, info, "adamw expects 8 Float32Arrays (p, g, m, v, hp, p', m', v')", "ffffffff", &a[0], &len[0], &a[1],
                 &len[1], &a[2], &len[2], &a[3], &len[3], &a[4], &len[4], &a[5], &len[5], &a[6], &len[6], &a[7], &len[7]))
    return NULL;
  size_t n = len[0];
  if (len[1] < n || len[2] < n || len[3] < n || len[4] < 7 || len[5] < n || len[6] < n || len[7] < n)
    FAIL("adamw: arrays of different lengths");
  float *hp = a[4];
  struct adam_ctx c = {a[0], a[1], a[2], a[3], a[5], a[6], a[7], hp[0], hp[1], hp[2], hp[3], hp[4], hp[5], hp[6],
                       len[4] >= 8 ? hp[7] : 1.0f};
  parallel_for((int64_t)n, GRAIN, adamw_range, &c);
  return NULL;
}
