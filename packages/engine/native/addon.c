/*
 * rl2 native kernels: a small N-API addon behind the `native` tfjs backend of @rl2/engine.
 * This file registers the kernels; each family lives in its own file (matmul.c,
 * elementwise.c, reduce.c, copy.c, gather.c, fused-*.c, adamw.c, memory.c), shared pieces in kernels.h
 * and the N-API argument reading in napi-helpers.h.
 */
#include "kernels.h"

/* Bumped whenever a function is added or changes; src/native-addon.ts refuses others. */
#define RL2_KERNELS_ABI 19

#define EXPORT(js, fn) {js, NULL, rl2_##fn, NULL, NULL, NULL, napi_default, NULL}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      EXPORT("gemm", gemm),
      EXPORT("setThreads", set_threads),
      EXPORT("getThreads", get_threads),
      EXPORT("binary", binary),
      EXPORT("compare", compare),
      EXPORT("unary", unary),
      EXPORT("softmax", softmax),
      EXPORT("reduce", reduce),
      EXPORT("transpose", transpose),
      EXPORT("gather", gather),
      EXPORT("stridedCopy", strided_copy),
      EXPORT("segmentSum", segment_sum),
      EXPORT("xentForward", xent_forward),
      EXPORT("xentBackward", xent_backward),
      EXPORT("rmsNorm", rms_norm),
      EXPORT("rmsNormGrad", rms_norm_grad),
      EXPORT("swiglu", swiglu),
      EXPORT("swigluGrad", swiglu_grad),
      EXPORT("rotary", rotary),
      EXPORT("attention", attention),
      EXPORT("attentionGrad", attention_grad),
      EXPORT("logpStats", logp_stats),
      EXPORT("logpStatsGrad", logp_stats_grad),
      EXPORT("adamw", adamw),
      EXPORT("sumSquares", sum_squares),
      EXPORT("decodeLayer", decode_layer),
      EXPORT("decodeStep", decode_step),
      EXPORT("linear", linear),
      EXPORT("decodeProducts", decode_products),
      EXPORT("frozenLinear", frozen_linear),
      EXPORT("halfBits", half_bits),
      EXPORT("flashAttention", flash_attention),
      EXPORT("flashAttentionGrad", flash_attention_grad),
      EXPORT("sampleRows", sample_rows),
      EXPORT("retainFreedMemory", retain_freed_memory),
  };
  napi_value abi;
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok ||
      napi_create_int32(env, RL2_KERNELS_ABI, &abi) != napi_ok ||
      napi_set_named_property(env, exports, "abi", abi) != napi_ok)
    return NULL;
  return exports;
}

NAPI_MODULE(rl2_kernels, init)
