/* parallel_for (see kernels.h): pthreads started and joined within one call. */
#include "kernels.h"

struct range_job {
  range_fn fn;
  void *ctx;
  int64_t begin, end;
};

static void *range_run(void *arg) {
  struct range_job *j = (struct range_job *)arg;
  j->fn(j->ctx, j->begin, j->end);
  return NULL;
}

void parallel_for(int64_t n, int64_t grain, range_fn fn, void *ctx) {
  int threads = openblas_get_num_threads();
  if (grain < 1) grain = 1;
  if ((int64_t)threads > n / grain) threads = (int)(n / grain);
  parallel_for_threads(n, threads, fn, ctx);
}

/* parallel_for over exactly min(threads, n) pieces (at least one unit each). */
void parallel_for_threads(int64_t n, int threads, range_fn fn, void *ctx) {
  if (threads > MAX_GEMM_THREADS) threads = MAX_GEMM_THREADS;
  if ((int64_t)threads > n) threads = (int)n;
  if (threads <= 1) {
    if (n > 0) fn(ctx, 0, n);
    return;
  }
  pthread_t tids[MAX_GEMM_THREADS];
  struct range_job jobs[MAX_GEMM_THREADS];
  int created[MAX_GEMM_THREADS] = {0};
  int64_t per = (n + threads - 1) / threads;
  for (int t = 0; t < threads; t++) {
    jobs[t].fn = fn;
    jobs[t].ctx = ctx;
    jobs[t].begin = t * per < n ? t * per : n;
    jobs[t].end = (t + 1) * per < n ? (t + 1) * per : n;
    if (jobs[t].begin >= jobs[t].end) continue;
    created[t] = t < threads - 1 && pthread_create(&tids[t], NULL, range_run, &jobs[t]) == 0;
    if (!created[t]) range_run(&jobs[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (created[t]) pthread_join(tids[t], NULL);
  }
}
