/* SwiGLU silu(gate) * up and both input gradients, elementwise. */
#include "kernels.h"

struct glu_ctx {
  const float *g, *u, *dy;
  float *y, *dg, *du;
};

static inline float sigmoidf_(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

HOT static void swiglu_range(void *vctx, int64_t i0, int64_t i1) {
  const struct glu_ctx *c = (const struct glu_ctx *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i];
    c->y[i] = g * sigmoidf_(g) * c->u[i];
  }
}

/* d/dg silu(g) u = u s (1 + g (1 - s)), d/du = g s, s = sigmoid(g) */
HOT static void swiglu_grad_range(void *vctx, int64_t i0, int64_t i1) {
  const struct glu_ctx *c = (const struct glu_ctx *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    float g = c->g[i], s = sigmoidf_(g), d = c->dy[i];
    c->dg[i] = d * c->u[i] * s * (1.0f + g * (1.0f - s));
    c->du[i] = d * g * s;
  }
}

/* swiglu(gate, up, y) and swigluGrad(gate, up, dy, dgate, dup), all of one length */
KERNEL(swiglu) {
  float *g, *u, *y;
  size_t lg, lu, ly;
  if (!read_args(env, info, "swiglu expects Float32Array gate, up, y", "fff", &g, &lg, &u, &lu, &y, &ly)) return NULL;
  if (lu < lg || ly < lg) FAIL("swiglu: arrays of different lengths");
  struct glu_ctx c = {g, u, NULL, y, NULL, NULL};
  parallel_for((int64_t)lg, GRAIN, swiglu_range, &c);
  return NULL;
}

KERNEL(swiglu_grad) {
  float *g, *u, *dy, *dg, *du;
  size_t lg, lu, ld, l1, l2;
  if (!read_args(env, info, "swigluGrad expects Float32Array gate, up, dy, dgate, dup", "fffff", &g, &lg, &u, &lu, &dy, &ld,
                 &dg, &l1, &du, &l2))
    return NULL;
  if (lu < lg || ld < lg || l1 < lg || l2 < lg) FAIL("swigluGrad: arrays of different lengths");
  struct glu_ctx c = {g, u, dy, NULL, dg, du};
  parallel_for((int64_t)lg, GRAIN, swiglu_grad_range, &c);
  return NULL;
}
