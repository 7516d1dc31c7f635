/* Matrix products (OpenBLAS cblas_sgemm) and the thread count every kernel splits over. */
#include "kernels.h"

#ifdef __APPLE__
int rl2_threads = 1; /* see kernels.h: Accelerate keeps no thread count of its own */
#endif

/*
 * gemm(transA, transB, batch, M, N, K, A, strideA, B, strideB, C)
 * C[b] = op(A[b]) @ op(B[b]) for b < batch, row-major; C[b] is [M, N] at offset b*M*N.
 * strideA/strideB are the element offsets between batches (0 broadcasts one matrix).
 * When B is shared and A is not transposed, the batch folds into one [batch*M, K] product.
 */
struct gemm_job {
  CBLAS_TRANSPOSE ta, tb;
  int64_t b0, b1, M, N, K, sa, sb;
  int lda, ldb;
  const float *A, *B;
  float *C;
};

static void *gemm_slice(void *arg) {
  struct gemm_job *j = (struct gemm_job *)arg;
  for (int64_t b = j->b0; b < j->b1; b++) {
    cblas_sgemm(CblasRowMajor, j->ta, j->tb, (int)j->M, (int)j->N, (int)j->K, 1.0f, j->A + b * j->sa, j->lda,
                j->B + b * j->sb, j->ldb, 0.0f, j->C + b * j->M * j->N, (int)j->N);
  }
  return NULL;
}

/*
 * Batched products (attention: [B*heads, T, d]) split the batch over `threads` pthreads, each
 * running a single-threaded sgemm: OpenBLAS's own threading splits one matrix at a time and,
 * for small ones, mostly waits. Threads are joined before returning.
 */
static void gemm_batched_parallel(const struct gemm_job *all, int threads, int configured) {
  pthread_t tids[MAX_GEMM_THREADS];
  struct gemm_job jobs[MAX_GEMM_THREADS];
  int created[MAX_GEMM_THREADS] = {0};
  int64_t batch = all->b1, per = (batch + threads - 1) / threads;
  openblas_set_num_threads(1);
  for (int t = 0; t < threads; t++) {
    jobs[t] = *all;
    jobs[t].b0 = t * per < batch ? t * per : batch;
    jobs[t].b1 = (t + 1) * per < batch ? (t + 1) * per : batch;
    if (jobs[t].b0 >= jobs[t].b1) continue;
    /* the last slice (or one whose thread failed to start) runs on the calling thread */
    created[t] = t < threads - 1 && pthread_create(&tids[t], NULL, gemm_slice, &jobs[t]) == 0;
    if (!created[t]) gemm_slice(&jobs[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (created[t]) pthread_join(tids[t], NULL);
  }
  openblas_set_num_threads(configured);
}

/*
 * One product (job->b0 only) split by rows of C over the configured threads, each running a
 * single-threaded sgemm on its rows (A's rows, or A's columns when transposed; all of B):
 * OpenBLAS's own threading shares packed blocks of B between its workers, who wait for each
 * other spinning, and on an oversubscribed machine a worker spins while its partner is off the
 * CPU. Here each thread packs B itself (O(K N) against O(M K N / threads) of work) and the only
 * wait is the join at the end, asleep. Products too small or too flat to split run as one call.
 */
static void gemm_one(const struct gemm_job *job, int configured) {
  int64_t M = job->M, N = job->N, K = job->K;
  int threads = configured;
  if (threads > MAX_GEMM_THREADS) threads = MAX_GEMM_THREADS;
  if (threads > 1 && M / threads < 64) threads = (int)(M / 64);
  if (threads <= 1 || M * N * K < (int64_t)(1 << 22)) {
    gemm_slice((void *)job);
    return;
  }
  pthread_t tids[MAX_GEMM_THREADS];
  struct gemm_job jobs[MAX_GEMM_THREADS];
  int created[MAX_GEMM_THREADS] = {0};
  int64_t per = (M + threads - 1) / threads;
  per = (per + 15) / 16 * 16; /* whole 16-row tiles of the sgemm kernels per thread */
  const float *A = job->A + job->b0 * job->sa, *B = job->B + job->b0 * job->sb;
  float *C = job->C + job->b0 * M * N;
  openblas_set_num_threads(1);
  for (int t = 0; t < threads; t++) {
    int64_t m0 = t * per < M ? t * per : M, m1 = (t + 1) * per < M ? (t + 1) * per : M;
    jobs[t] = *job;
    jobs[t].b0 = 0;
    jobs[t].b1 = m1 > m0 ? 1 : 0;
    jobs[t].M = m1 - m0;
    jobs[t].A = job->ta == CblasTrans ? A + m0 : A + m0 * job->lda;
    jobs[t].B = B;
    jobs[t].C = C + m0 * N;
    if (m1 <= m0) continue;
    created[t] = t < threads - 1 && pthread_create(&tids[t], NULL, gemm_slice, &jobs[t]) == 0;
    if (!created[t]) gemm_slice(&jobs[t]);
  }
  for (int t = 0; t < threads; t++) {
    if (created[t]) pthread_join(tids[t], NULL);
  }
  openblas_set_num_threads(configured);
}

KERNEL(gemm) {
  int ta, tb;
  int64_t batch, M, N, K, sa, sb;
  float *A, *B, *C;
  size_t la, lb, lc;
  if (!read_args(env, info, "gemm expects Float32Array A, B, C", "bbnnnnfnfnf", &ta, &tb, &batch, &M, &N, &K, &A, &la,
                 &sa, &B, &lb, &sb, &C, &lc))
    return NULL;
  if (batch < 1 || M < 0 || N < 0 || K < 0 || sa < 0 || sb < 0) FAIL("gemm: bad sizes");
  if ((size_t)(batch * M * N) > lc || (size_t)((batch - 1) * sa + M * K) > la ||
      (size_t)((batch - 1) * sb + K * N) > lb)
    FAIL("gemm: array too short for the given sizes");
  if (M == 0 || N == 0) return NULL;
  if (K == 0) {
    memset(C, 0, sizeof(float) * (size_t)(batch * M * N));
    return NULL;
  }
  int lda = ta ? (int)M : (int)K, ldb = tb ? (int)K : (int)N;
  CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  int configured = openblas_get_num_threads();
  if (batch > 1 && sb == 0 && !ta && sa == M * K) {
    struct gemm_job one = {TA, TB, 0, 1, batch * M, N, K, 0, 0, lda, ldb, A, B, C};
    gemm_one(&one, configured);
    return NULL;
  }
  struct gemm_job job = {TA, TB, 0, batch, M, N, K, sa, sb, lda, ldb, A, B, C};
  int threads = configured;
  if (threads > MAX_GEMM_THREADS) threads = MAX_GEMM_THREADS;
  if (threads > batch) threads = (int)batch;
  /* whole matrices per thread when they divide evenly (or there are many: at most a quarter
     idle): no OpenBLAS worker hand-offs (which stall when the machine is oversubscribed), and
     small products, which OpenBLAS cannot split well, run in parallel too; otherwise (3 large
     matrices on 2 threads) one OpenBLAS-threaded product after the other keeps every thread busy */
  int even = batch % threads == 0 || batch >= 4 * (int64_t)threads;
  if (threads > 1 && ((batch >= threads && even) || M * N * K <= (int64_t)(1 << 21))) {
    gemm_batched_parallel(&job, threads, configured);
    return NULL;
  }
  for (int64_t b = 0; b < batch; b++) {
    struct gemm_job one = job;
    one.b0 = b;
    one.b1 = b + 1;
    gemm_one(&one, configured);
  }
  return NULL;
}

KERNEL(set_threads) {
  int64_t n;
  if (!read_args(env, info, "setThreads expects a positive integer", "n", &n)) return NULL;
  if ((int)n < 1) FAIL("setThreads expects a positive integer");
  openblas_set_num_threads((int)n);
  return NULL;
}

KERNEL(get_threads) {
  napi_value out;
  CHECK(napi_create_int32(env, openblas_get_num_threads(), &out));
  return out;
}
