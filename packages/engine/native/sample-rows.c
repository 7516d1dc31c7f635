/* Batched next-token sampling over rows of logits: one call per decode step instead of a JS
   loop of exp calls per vocabulary entry and row. */
#include "kernels.h"

/*
 * sampleRows(logits [B, V], B, V, temperature Float64Array [B], u Float64Array [B],
 *            tokens Int32Array [B], logprobs Float64Array [B]).
 * Row b with temperature t > 0: weights w = exp((l - max) / t) (float, about 2 ulp), their sum
 * S in double in index order, and the token is the first i whose running sum exceeds u[b] * S
 * (the inverse CDF; u in [0, 1)); temperature 0: the first argmax (greedy), scored at t = 1;
 * NaN: the row is skipped (its tokens/logprobs entries are left as they are). logprobs[b] =
 * (l_token - max) / t - log S, the token's log-probability under the whole distribution.
 * Rows run one after another on the calling thread (B x V is small; waking threads costs more).
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
  float *w = malloc(sizeof(float) * (size_t)V);
  if (!w) FAIL("sampleRows: out of memory");
  for (int64_t b = 0; b < B; b++) {
    double t = temp[b];
    if (t != t) continue;
    const float *row = logits + b * V;
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
      double target = u[b] * sum, run = 0;
      for (int64_t i = 0; i < V; i++) {
        run += w[i];
        if (run > target) {
          pick = i;
          break;
        }
      }
    }
    tokens[b] = (int32_t)pick;
    logprobs[b] = (double)(row[pick] - m) * inv - log(sum);
  }
  free(w);
  return NULL;
}
