/* The process's malloc policy for large tensors (retainFreedMemory in src/native-addon.ts). */
#include "kernels.h"
#ifdef __GLIBC__
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((uintptr_t)2 << 20)

/*
 * retainFreedMemory(reserveBytes): glibc serves every allocation from its heap instead of mmap
 * (M_MMAP_MAX 0) and never trims the heap (M_TRIM_THRESHOLD -1), so a freed tensor's pages are
 * reused by the next one instead of going back to the kernel. With reserveBytes > 0 the heap is
 * first grown by that much, the new range marked for transparent huge pages (MADV_HUGEPAGE: one
 * fault per 2 MiB instead of per 4 KiB when first touched) and freed again: nothing is touched,
 * so the RSS does not change, and later tensors are carved out of it. Returns false without glibc.
 */
KERNEL(retain_freed_memory) {
  int64_t reserve = 0;
  if (!read_args(env, info, "retainFreedMemory expects a byte count", "n", &reserve)) return NULL;
#ifdef __GLIBC__
  int ok = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
  if (ok && reserve > 0) {
    char *p = malloc((size_t)reserve);
    if (p != NULL) {
      uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
      uintptr_t hi = ((uintptr_t)p + (uintptr_t)reserve) & ~(HUGE_PAGE - 1);
      if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
      free(p);
    }
  }
#else
  (void)reserve;
  int ok = 0;
#endif
  napi_value result;
  if (napi_get_boolean(env, ok, &result) != napi_ok) return NULL;
  return result;
}

/* The calling thread's scratch buffers (kernels.h): kept and grown, never freed (a thread's
   largest decode step stays allocated, which is small). */
float *rl2_scratch(int slot, size_t n) {
  static __thread float *buf[RL2_SCRATCH_SLOTS];
  static __thread size_t cap[RL2_SCRATCH_SLOTS];
  if (slot < 0 || slot >= RL2_SCRATCH_SLOTS) return NULL;
  if (n <= cap[slot]) return buf[slot];
  float *grown = realloc(buf[slot], sizeof(float) * n);
  if (!grown) return NULL;
  buf[slot] = grown;
  cap[slot] = n;
  return grown;
}
