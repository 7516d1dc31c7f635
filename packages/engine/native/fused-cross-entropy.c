/* Softmax cross-entropy per row, forward and backward (softmaxCrossEntropy). */
#include "kernels.h"

/*
 * xentForward(logits [rows, cols], labels [rows], losses [rows]):
 * losses[r] = logsumexp(logits[r]) - logits[r, labels[r]]; rows whose label is < 0 give 0
 * (masked positions). Returns -1, or the first row whose label is >= cols.
 */
KERNEL(xent_forward) {
  float *x, *loss;
  int32_t *lab;
  size_t lx, ll, lo;
  int64_t rows, cols;
  if (!read_args(env, info, "xentForward expects Float32Array logits, Int32Array labels, Float32Array losses", "fnnif", &x,
                 &lx, &rows, &cols, &lab, &ll, &loss, &lo))
    return NULL;
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lx || (size_t)rows > ll || (size_t)rows > lo)
    FAIL("xentForward: array too short for [rows, cols]");
  int64_t bad = -1;
  for (int64_t r = 0; r < rows; r++) {
    int64_t t = lab[r];
    if (t < 0) {
      loss[r] = 0;
      continue;
    }
    if (t >= cols) {
      if (bad < 0) bad = r;
      loss[r] = NAN;
      continue;
    }
    const float *row = x + r * cols;
    loss[r] = (float)(row_lse(row, cols) - row[t]);
  }
  return int64_result(env, bad);
}

static void xent_backward_rows(void *vctx, int64_t r0, int64_t r1) {
  const struct rows_ctx *c = (const struct rows_ctx *)vctx;
  int64_t cols = c->cols;
  for (int64_t r = r0; r < r1; r++) {
    const float *row = c->x + r * cols;
    float *g = c->o + r * cols;
    int64_t t = c->labels[r];
    if (t < 0 || t >= cols) {
      memset(g, 0, sizeof(float) * (size_t)cols);
      continue;
    }
    float lse = (float)row_lse(row, cols), d = c->dy[r];
    exp_shifted(row, cols, lse, d, g);
    g[t] -= d;
  }
}

/*
 * xentBackward(logits [rows, cols], labels [rows], dy [rows], dx [rows, cols]):
 * dx[r, c] = dy[r] * (softmax(logits[r])[c] - [c == labels[r]]); 0 for rows with label < 0.
 */
KERNEL(xent_backward) {
  float *x, *dy, *dx;
  int32_t *lab;
  size_t lx, ll, ld, lo;
  int64_t rows, cols;
  if (!read_args(env, info, "xentBackward expects Float32Array logits, Int32Array labels, Float32Array dy, Float32Array dx",
                 "fnniff", &x, &lx, &rows, &cols, &lab, &ll, &dy, &ld, &dx, &lo))
    return NULL;
  if (rows < 0 || cols < 1 || (size_t)(rows * cols) > lx || (size_t)rows > ll || (size_t)rows > ld ||
      (size_t)(rows * cols) > lo)
    FAIL("xentBackward: array too short for [rows, cols]");
  struct rows_ctx c = {x, dx, cols, lab, dy, NULL};
  parallel_for(rows, GRAIN / cols + 1, xent_backward_rows, &c);
  return NULL;
}
