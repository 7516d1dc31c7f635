/* parallel_for (see kernels.h) over a persistent pool of worker threads.
 *
 * A decode step makes ~200 short parallel calls (7 projections per layer); starting and joining
 * pthreads per call costs tens of microseconds each, so the workers stay: between calls they spin
 * for POOL_SPIN_NS, then sleep on a condition variable (an idle pool takes no CPU, and a sleeping
 * thread never holds Node's event loop). The pool grows to the largest thread count asked for.
 * One caller at a time: a call made while the pool is busy (another JS thread, or a nested
 * parallel_for inside a range) starts and joins its own pthreads as before. */
#include "kernels.h"
#include <time.h>

/* How long an idle worker (and a waiting caller) polls before sleeping. */
#define POOL_SPIN_NS 60000

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

/* the old path: pthreads started and joined within the call */
static void spawn_for(int64_t n, int threads, range_fn fn, void *ctx) {
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

static struct {
  pthread_mutex_t busy; /* held by the one caller using the pool */
  pthread_mutex_t mu;   /* with wake/done: the sleeping side of the handshake */
  pthread_cond_t wake, done;
  int workers;            /* threads started; worker i runs piece i + 1 */
  uint64_t gen;           /* job number, bumped (release) once the job's fields are set */
  int pending;            /* workers that have not yet acknowledged job `gen` */
  range_fn fn;
  void *ctx;
  int64_t n, per;
  int pieces;
  uint64_t born[MAX_GEMM_THREADS];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0,
          NULL, NULL, 0, 0, 0, {0}};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* polls until *word != value (spin, then sleep on cv under pool.mu); returns the new value */
static uint64_t wait_change(uint64_t *word, uint64_t value, pthread_cond_t *cv) {
  uint64_t v;
  int64_t until = 0;
  for (int i = 0; (v = __atomic_load_n(word, __ATOMIC_ACQUIRE)) == value; i++) {
    if ((i & 63) == 63) {
      int64_t t = now_ns();
      if (!until) until = t + POOL_SPIN_NS;
      else if (t > until) break;
    }
    cpu_relax();
  }
  if (v != value) return v;
  pthread_mutex_lock(&pool.mu);
  while ((v = __atomic_load_n(word, __ATOMIC_ACQUIRE)) == value) pthread_cond_wait(cv, &pool.mu);
  pthread_mutex_unlock(&pool.mu);
  return v;
}

static void run_piece(int piece) {
  if (piece >= pool.pieces) return;
  int64_t b = piece * pool.per, e = b + pool.per;
  if (e > pool.n) e = pool.n;
  if (b < e) pool.fn(pool.ctx, b, e);
}

static void *worker_main(void *arg) {
  int id = (int)(intptr_t)arg;
  /* the job number when this worker was started (no job runs while the pool grows): a job
     published before this thread first runs is still seen as new */
  uint64_t seen = pool.born[id];
  for (;;) {
    seen = wait_change(&pool.gen, seen, &pool.wake);
    run_piece(id + 1);
    if (__atomic_sub_fetch(&pool.pending, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&pool.mu);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mu);
    }
  }
  return NULL;
}

/* a forked child has none of the parent's threads: start over */
static void pool_after_fork(void) {
  pthread_mutex_init(&pool.busy, NULL);
  pthread_mutex_init(&pool.mu, NULL);
  pthread_cond_init(&pool.wake, NULL);
  pthread_cond_init(&pool.done, NULL);
  pool.workers = 0;
  pool.pending = 0;
}

/* grows the pool to `want` workers (as many as start); called holding pool.busy */
static void pool_grow(int want) {
  static int registered = 0;
  if (!registered) registered = pthread_atfork(NULL, NULL, pool_after_fork) == 0;
  if (want > MAX_GEMM_THREADS - 1) want = MAX_GEMM_THREADS - 1;
  while (pool.workers < want) {
    pthread_t t;
    pool.born[pool.workers] = pool.gen;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int ok = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)pool.workers) == 0;
    pthread_attr_destroy(&attr);
    if (!ok) break;
    pool.workers++;
  }
}

/* runs the job on the pool; 0 when the pool is busy or too small (the caller spawns instead) */
static int pool_for(int64_t n, int threads, range_fn fn, void *ctx) {
  if (pthread_mutex_trylock(&pool.busy) != 0) return 0;
  pool_grow(threads - 1);
  if (pool.workers < 1) {
    pthread_mutex_unlock(&pool.busy);
    return 0;
  }
  if (threads > pool.workers + 1) threads = pool.workers + 1;
  pool.fn = fn;
  pool.ctx = ctx;
  pool.n = n;
  pool.per = (n + threads - 1) / threads;
  pool.pieces = threads;
  __atomic_store_n(&pool.pending, pool.workers, __ATOMIC_RELAXED);
  pthread_mutex_lock(&pool.mu);
  __atomic_add_fetch(&pool.gen, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mu);
  run_piece(0);
  /* every worker acknowledges every job, so none can read the next job's fields for this one */
  if (__atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) != 0) {
    int64_t until = now_ns() + POOL_SPIN_NS;
    for (int i = 0; __atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) != 0; i++) {
      if ((i & 63) == 63 && now_ns() > until) {
        pthread_mutex_lock(&pool.mu);
        while (__atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&pool.done, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
        break;
      }
      cpu_relax();
    }
  }
  pthread_mutex_unlock(&pool.busy);
  return 1;
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
  if (!pool_for(n, threads, fn, ctx)) spawn_for(n, threads, fn, ctx);
}
