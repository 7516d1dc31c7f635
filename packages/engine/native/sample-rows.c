/* Batched next-token sampling over rows of logits: one call per decode step instead of a JS
   loop of exp calls per vocabulary entry and row. */
#include "kernels.h"

struct sample_job {
  const float *logits;
  const double *temp, *u;
  int64_t V;
  int32_t *tokens;
  double *logprobs;
  volatile int failed;
};

/* rows b0 .. b1 - 1, each on its own (the draw of a row never depends on another's) */
static void sample_range(void *vctx, int64_t b0, int64_t b1) {
  struct sample_job *c = (struct sample_job *)vctx;
  int64_t V = c->V;
  float *w = malloc(sizeof(float) * (size_t)V);
  if (!w) {
    c->failed = 1;
    return;
  }
  for (int64_t b = b0; b < b1; b++) {
    double t = c->temp[b];
    if (t != t) continue;
    const float *row = c->logits + b * V;
    int64_t argmax = 0;
    float m = row[0];
    for (int64_t i = 1; i < V; i++)
      if (row[i] > m) m = row[i], argmax = i;
    float inv = t > 0 ? (float)(1.0 / t) : 1.0f;
    for (int64_t i = 0; i < V; i++) w[i] = fast_expf((row[i] - m) * inv);
    double sum = 0;
    for (int64_t i = 0; i < V; i++) sum += w[i];
    int64_t pick = argmax;
    if (t > 0) {
      double target = c->u[b] * sum, run = 0;
      for (int64_t i = 0; i < V; i++) {
        run += w[i];
        if (run > target) {
          pick = i;
          break;
        }
      }
    }
    c->tokens[b] = (int32_t)pick;
    c->logprobs[b] = (double)(row[pick] - m) * inv - log(sum);
  }
  free(w);
}

/*
 * sampleRows(logits [B, V], B, V, temperature Float64Array [B], u Float64Array [B],
 *            tokens Int32Array [B], logprobs Float64Array [B]).
 * Row b with temperature t > 0: weights w = exp((l - max) / t) (float, about 2 ulp), their sum
 * S in double in index order, and the token is the first i whose running sum exceeds u[b] * S
 * (the inverse CDF; u in [0, 1)); temperature 0: the first argmax (greedy), scored at t = 1;
 * NaN: the row is skipped (its tokens/logprobs entries are left as they are). logprobs[b] =
 * (l_token - max) / t - log S, the token's log-probability under the whole distribution.
 * Rows split over the threads from 2^20 logits on (a batch-64 step over a 151,936-token
 * vocabulary); below, one thread (waking the others costs more). Each row's result is the same
 * whichever thread draws it.
 */
KERNEL(sample_rows) {
  float *logits;
  double *temp, *u, *logprobs;
  int32_t *tokens;
  size_t ll, lt, lu, lk, lp;
  int64_t B, V;
  if (!read_args(env, info,
                 "sampleRows expects Float32Array logits, rows, vocab, Float64Array temperature, u, "
                 "Int32Array tokens, Float64Array logprobs",
                 "fnnFFiF", &logits, &ll, &B, &V, &temp, &lt, &u, &lu, &tokens, &lk, &logprobs, &lp))
    return NULL;
  if (B < 0 || V < 1 || (size_t)(B * V) > ll || (size_t)B > lt || (size_t)B > lu || (size_t)B > lk || (size_t)B > lp)
    FAIL("sampleRows: array too short for [rows, vocab]");
  struct sample_job c = {logits, temp, u, V, tokens, logprobs, 0};
  if (B * V >= (1 << 20)) parallel_for(B, 1, sample_range, &c);
  else sample_range(&c, 0, B);
  if (c.failed) FAIL("sampleRows: out of memory");
  return NULL;
}
