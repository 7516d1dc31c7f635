#!/usr/bin/env python3
"""numpy (OpenBLAS) sgemm GFLOP/s for the shapes given as JSON on argv[1]; prints JSON.

Used by bench/engine.bench.ts as the machine's practical limit. Each shape:
{"a": [...], "b": [...], "ta": bool, "tb": bool}; transposes are numpy views, so OpenBLAS
gets the transposed operand directly, as cblas_sgemm does in the native kernels.
"""
import json
import sys
import time

import numpy as np

shapes = json.loads(sys.argv[1])
min_seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
rng = np.random.default_rng(0)
out = []
for s in shapes:
    a = rng.standard_normal(s["a"], dtype=np.float32)
    b = rng.standard_normal(s["b"], dtype=np.float32)
    a2 = np.swapaxes(a, -1, -2) if s["ta"] else a
    b2 = np.swapaxes(b, -1, -2) if s["tb"] else b
    c = np.matmul(a2, b2)  # warm-up
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    flops = 2.0 * m * n * k * (c.size // (m * n))
    reps, t0 = 0, time.perf_counter()
    while True:
        np.matmul(a2, b2)
        reps += 1
        dt = time.perf_counter() - t0
        if dt >= min_seconds and reps >= 3:
            break
    out.append(flops * reps / dt / 1e9)
print(json.dumps(out))
