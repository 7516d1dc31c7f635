# One rank of `pnpm bench parallel`'s torch.distributed row: all-reduce (sum, float32) on the
# gloo backend, timed like allreduce-rank.ts (2 warm-up calls, 3 to estimate, then as many as fit
# in BENCH_BUDGET_MS (default 1 s), 5 to 200, back to back; rank 0 decides the count). Started
# by launch() with the torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); one
# thread per rank.
# Prints `RESULT {"ranks", "bytes", "ms"}` per size on rank 0. Run with Debian's /usr/bin/python3.
import json
import os
import time

import torch
import torch.distributed as dist

torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "1024,1048576").split(",")]
BUDGET_S, MAX_ITERS = float(os.environ.get("BENCH_BUDGET_MS", "1000")) / 1000, 200


def timed(fn):
    fn()
    fn()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    est = (time.perf_counter() - t0) / 3
    count = torch.tensor([float(max(5, min(MAX_ITERS, int(BUDGET_S / max(est, 1e-6))))) if rank == 0 else 0.0])
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    iters = int(count[0])
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) * 1000 / iters


for n in sizes:
    buf = torch.zeros(n, dtype=torch.float32)
    ms = timed(lambda: dist.all_reduce(buf))
    if rank == 0:
        print("RESULT " + json.dumps({"ranks": size, "bytes": n * 4, "ms": ms}), flush=True)
dist.destroy_process_group()
