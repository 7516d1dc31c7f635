"""Times RL2's own Karmarkar-Karp partitioner for `pnpm bench packing`.

Usage: python3 rl2_partition_timer.py /path/to/RL2/utils/seqlen_balance.py lengths.json k
Prints one JSON line: {"seconds": wall, "cpuSeconds": process CPU, "bins": [[...], ...]} (RL2 is loaded from the given path,
never vendored; seqlen_balance.py needs only the standard library).
"""
import importlib.util
import json
import sys
import time


def main():
    path, lengths_file, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = importlib.util.spec_from_file_location("rl2_seqlen_balance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(lengths_file) as f:
        lengths = json.load(f)
    start, cpu_start = time.perf_counter(), time.process_time()
    bins = module.get_seqlen_balanced_partitions(lengths, k, equal_size=False)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    print(json.dumps({"seconds": seconds, "cpuSeconds": cpu_seconds, "bins": bins}))


if __name__ == "__main__":
    main()
