/*
 * The N-API side every kernel shares: errors, and reading a call's arguments.
 *
 * A kernel reads all its arguments with one `read_args` call whose format names each one's
 * type, then checks the array lengths its sizes need.
 * Shapes are checked in TypeScript (src/kernels/native-*.ts and src/fused/); here only what
 * keeps a wrong call from reading or writing out of bounds.
 */
#ifndef RL2_NAPI_HELPERS_H
#define RL2_NAPI_HELPERS_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Most dims a shape, stride or permutation argument may have. */
#define MAX_RANK 8
/* Most arguments a kernel takes. */
#define MAX_ARGS 13

/* Throws "rl2 native: N-API call failed: <call>" and returns NULL from the kernel when `call` fails. */
#define CHECK(call)                                                                               \
  do {                                                                                            \
    if ((call) != napi_ok) {                                                                      \
      napi_throw_error(env, NULL, "rl2 native: N-API call failed: " #call);                        \
      return NULL;                                                                                \
    }                                                                                             \
  } while (0)

/* Throws "rl2 native: <msg>" and returns NULL from the kernel. */
#define FAIL(msg)                                                                                 \
  do {                                                                                            \
    napi_throw_error(env, NULL, "rl2 native: " msg);                                              \
    return NULL;                                                                                  \
  } while (0)

/*
 * Reads the call's arguments, one letter of `fmt` per argument, into the pointers that follow:
 *   f  Float32Array                          -> float **, size_t *length
 *   F  Float64Array                          -> double **, size_t *length
 *   i  Int32Array                            -> int32_t **, size_t *length
 *   u  Uint8Array                            -> uint8_t **, size_t *length
 *   w  Float32Array or Int32Array (4-byte words, read as bits) -> void **, size_t *length, napi_typedarray_type *
 *   n  integer                               -> int64_t *  (0 when not a number)
 *   b  boolean                               -> int *      (0 when not a boolean)
 *   d  number                                -> double *   (left as is when not a number)
 *   s  Int32Array of dims (shape, strides, perm) -> int64_t[MAX_RANK], int *rank (-1 when not
 *      an Int32Array of at most MAX_RANK: the kernel says which rank it needs)
 * Returns 1; or 0 with a JS error pending: "rl2 native: too few arguments", or
 * "rl2 native: <what>" when a typed array has the wrong type.
 */
static inline int read_args(napi_env env, napi_callback_info info, const char *what, const char *fmt, ...) {
  size_t want = 0;
  while (fmt[want]) want++;
  size_t argc = MAX_ARGS;
  napi_value argv[MAX_ARGS];
  if (want > MAX_ARGS || napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    napi_throw_error(env, NULL, "rl2 native: N-API call failed: napi_get_cb_info");
    return 0;
  }
  if (argc < want) {
    napi_throw_error(env, NULL, "rl2 native: too few arguments");
    return 0;
  }
  va_list ap;
  va_start(ap, fmt);
  int ok = 1;
  for (size_t k = 0; k < want && ok; k++) {
    napi_value v = argv[k];
    char c = fmt[k];
    if (c == 'f' || c == 'F' || c == 'i' || c == 'u' || c == 'w') {
      void **data = va_arg(ap, void **);
      size_t *len = va_arg(ap, size_t *);
      napi_typedarray_type type, *type_out = c == 'w' ? va_arg(ap, napi_typedarray_type *) : NULL;
      void *ptr;
      if (napi_get_typedarray_info(env, v, &type, len, &ptr, NULL, NULL) != napi_ok) {
        ok = 0;
        break;
      }
      if (c == 'f') ok = type == napi_float32_array;
      else if (c == 'F') ok = type == napi_float64_array;
      else if (c == 'i') ok = type == napi_int32_array;
      else if (c == 'u') ok = type == napi_uint8_array;
      else ok = type == napi_float32_array || type == napi_int32_array;
      *data = ptr;
      if (type_out) *type_out = type;
    } else if (c == 'n') {
      int64_t *out = va_arg(ap, int64_t *);
      *out = 0;
      napi_get_value_int64(env, v, out);
    } else if (c == 'b') {
      int *out = va_arg(ap, int *);
      bool b = false;
      napi_get_value_bool(env, v, &b);
      *out = b ? 1 : 0;
    } else if (c == 'd') {
      napi_get_value_double(env, v, va_arg(ap, double *));
    } else if (c == 's') {
      int64_t *out = va_arg(ap, int64_t *);
      int *rank = va_arg(ap, int *);
      napi_typedarray_type type;
      size_t n;
      void *ptr;
      *rank = -1;
      if (napi_get_typedarray_info(env, v, &type, &n, &ptr, NULL, NULL) == napi_ok && type == napi_int32_array &&
          n <= MAX_RANK) {
        for (size_t d = 0; d < n; d++) out[d] = ((const int32_t *)ptr)[d];
        *rank = (int)n;
      }
    }
  }
  va_end(ap);
  if (!ok) {
    char message[256];
    snprintf(message, sizeof(message), "rl2 native: %s", what);
    napi_throw_error(env, NULL, message);
  }
  return ok;
}

/* Returns a JS number for a kernel's int64 result (-1 or the first bad row / index). */
static inline napi_value int64_result(napi_env env, int64_t value) {
  napi_value out;
  CHECK(napi_create_int64(env, value, &out));
  return out;
}

#endif
