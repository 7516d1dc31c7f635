/* float32 values to bfloat16 or float16 bits, rounding to nearest even (the 16-bit weight copies
   that decoding streams, remade after every optimizer step: in C on every thread, where a JS
   loop takes seconds at 0.6B parameters). */
#include "kernels.h"

struct half_job {
  const uint32_t *x;
  uint16_t *y;
};

/* as torch's .to(torch.bfloat16): NaN becomes the quiet NaN 0x7fc0 */
HOT static void bf16_range(void *vctx, int64_t i0, int64_t i1) {
  const struct half_job *c = (const struct half_job *)vctx;
  for (int64_t i = i0; i < i1; i++) {
    uint32_t u = c->x[i];
    uint16_t r = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    c->y[i] = (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) ? 0x7fc0 : r;
  }
}

void bf16_bits(const float *x, int64_t n, uint16_t *y) {
  struct half_job c = {(const uint32_t *)x, y};
  parallel_for(n, GRAIN, bf16_range, &c);
}

/* binary16 bits of float32 bits u: overflow to infinity, subnormals rounded, NaN quiet (0x7e00) */
static inline uint16_t f16_of(uint32_t u) {
  uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = (int32_t)exp - 112; /* the binary16 exponent field */
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    uint32_t full = mant | 0x800000u, shift = (uint32_t)(14 - e), rest = full & ((1u << shift) - 1), half = 1u << (shift - 1);
    uint32_t m = full >> shift;
    return (uint16_t)(sign | (m + (rest > half || (rest == half && (m & 1)) ? 1 : 0)));
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fffu;
  return (uint16_t)(h + (rest > 0x1000u || (rest == 0x1000u && (h & 1)) ? 1 : 0)); /* a carry rounds up */
}

static void f16_range(void *vctx, int64_t i0, int64_t i1) {
  const struct half_job *c = (const struct half_job *)vctx;
  for (int64_t i = i0; i < i1; i++) c->y[i] = f16_of(c->x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* F16C's conversion rounds to nearest even as f16_of does (subnormals, overflow to infinity);
   only its NaNs keep payload bits, so a group of 8 holding a NaN takes f16_of. */
__attribute__((target("avx,f16c"))) static void f16_range_f16c(void *vctx, int64_t i0, int64_t i1) {
  const struct half_job *c = (const struct half_job *)vctx;
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 v = _mm256_loadu_ps((const float *)(c->x + i));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_testz_ps(nan, nan))
      _mm_storeu_si128((__m128i *)(c->y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else
      for (int l = 0; l < 8; l++) c->y[i + l] = f16_of(c->x[i + l]);
  }
  for (; i < i1; i++) c->y[i] = f16_of(c->x[i]);
}
#endif

/* f16_range_f16c where the CPU has F16C (RL2_DECODE_ISA=c: the plain loop, for tests) */
static range_fn f16_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  const char *want = getenv("RL2_DECODE_ISA");
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c") && !(want && !strcmp(want, "c"))) return f16_range_f16c;
#endif
  return f16_range;
}

/* halfBits(x Float32Array, weightDtype 1 (bfloat16) or 2 (float16), y Uint16Array): y[i] = the bits of x[i] */
KERNEL(half_bits) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) FAIL("halfBits expects x, weightDtype, y");
  int32_t dtype;
  if (napi_get_value_int32(env, argv[1], &dtype) != napi_ok || (dtype != RL2_WT_BF16 && dtype != RL2_WT_F16))
    FAIL("halfBits: weightDtype must be 1 (bfloat16) or 2 (float16)");
  napi_typedarray_type tx, ty;
  size_t lx, ly;
  void *x, *y;
  if (napi_get_typedarray_info(env, argv[0], &tx, &lx, &x, NULL, NULL) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &ty, &ly, &y, NULL, NULL) != napi_ok || tx != napi_float32_array ||
      ty != napi_uint16_array)
    FAIL("halfBits expects a Float32Array x and a Uint16Array y");
  if (ly < lx) FAIL("halfBits: y is shorter than x");
  if (dtype == RL2_WT_BF16) {
    bf16_bits(x, (int64_t)lx, y);
    return NULL;
  }
  struct half_job c = {(const uint32_t *)x, (uint16_t *)y};
  parallel_for((int64_t)lx, GRAIN, f16_kernel(), &c);
  return NULL;
}
