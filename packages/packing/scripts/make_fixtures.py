"""Write @rl2/packing's reference fixtures by running RL2's own partitioner and planner.

Usage (needs python3 with torch for the planner cases; RL2 is NOT vendored here):
    python3 packages/packing/scripts/make_fixtures.py /path/to/RL2-checkout [out_dir]

`/path/to/RL2-checkout` is the folder that contains the `RL2/` package (ChenmienTan/RL2).
Writes out_dir/partitions.json (RL2.utils.seqlen_balance.get_seqlen_balanced_partitions) and
out_dir/plans.json (RL2.utils.sequences._tensor_dict_to_minibatches: bin count, padding, pairs,
SHUFFLE_INDICES). Lengths are drawn with fixed seeds so the files are reproducible.
"""
import json
import os
import random
import sys
import types


def load_rl2(root):
    sys.path.insert(0, os.path.abspath(root))
    from RL2.utils import seqlen_balance  # noqa: E402

    sequences = None
    try:
        import torch  # noqa: F401
        # sequences.py imports RL2.utils.communication only for broadcast/gather helpers that the
        # planner never calls; stub it so aiohttp/requests/a process group are not needed.
        stub = types.ModuleType("RL2.utils.communication")
        stub.broadcast_object = stub.gather_and_concat_list = lambda *a, **k: None
        sys.modules["RL2.utils.communication"] = stub
        from RL2.utils import sequences  # noqa: E402
    except ImportError as e:
        print(f"planner fixtures skipped (needs torch): {e}", file=sys.stderr)
    return seqlen_balance, sequences


def lognormal(rng, n, mu=6.0, sigma=1.0, lo=1, hi=None):
    out = []
    for _ in range(n):
        v = max(lo, int(rng.lognormvariate(mu, sigma)))
        out.append(min(v, hi) if hi else v)
    return out


def partition_cases():
    rng = random.Random(20240601)
    return [
        ("hand-5-into-2", [8, 7, 6, 5, 4], 2),
        ("hand-ties", [3, 3, 3, 3, 2, 2, 2, 2], 3),
        ("zeros-and-ties", [0, 0, 5, 5, 0, 5, 1, 1], 4),
        ("k-equals-n", [9, 1, 4, 4, 7, 2], 6),
        ("k-is-1", [5, 1, 2, 8], 1),
        ("uniform-small-ints-200-into-7", [rng.randint(1, 6) for _ in range(200)], 7),
        ("lognormal-1000-into-8", lognormal(rng, 1000), 8),
        ("lognormal-3000-into-64", lognormal(rng, 3000, 7.0, 1.2), 64),
        ("long-tail-500-into-16", lognormal(rng, 500, 5.0, 2.0), 16),
    ]


def plan_cases():
    rng = random.Random(7)
    return [
        # name, lengths, dp (multiple_of), max_length_per_dp, pair
        ("single-rank", [5, 9, 2, 7, 3, 8], 1, 12, False),
        ("dp2-heaviest-bin-over-budget-grows", [7, 5, 9, 8, 1, 6, 10, 7, 5], 2, 10, False),
        ("pads-when-bins-exceed-count", [6, 6, 6], 4, 7, False),
        ("grows-then-pads", [10, 7, 10, 4, 8], 2, 10, False),
        ("pairs-dp2", [4, 6, 3, 3, 8, 1, 2, 2, 5, 5], 2, 14, True),
        ("lognormal-400-dp4", lognormal(rng, 400, 5.0, 0.8, 1, 2000), 4, 4096, False),
        ("lognormal-pairs-200-dp8", lognormal(rng, 400, 5.0, 0.8, 1, 1500), 8, 3000, True),
    ]


def run_planner(sequences, lengths, dp, budget, pair):
    import torch

    width = max(lengths)
    eos = torch.zeros((len(lengths), width), dtype=torch.long)
    for i, n in enumerate(lengths):
        eos[i, n - 1] = 1
    minibatches = sequences._tensor_dict_to_minibatches({"eos_mask": eos}, dp, budget, pair)
    shuffle = list(sequences.SHUFFLE_INDICES)
    bins, pos = [], 0
    for mb in minibatches:
        size = mb["eos_mask"].shape[0]
        bins.append(shuffle[pos:pos + size])
        pos += size
    return {"bins": bins, "shuffleIndices": shuffle, "totalRows": len(shuffle)}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_fixtures.py /path/to/RL2-checkout [out_dir]")
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "fixtures")
    seqlen_balance, sequences = load_rl2(sys.argv[1])

    partitions = [
        {"name": name, "k": k, "lengths": lengths,
         "bins": seqlen_balance.get_seqlen_balanced_partitions(lengths, k, equal_size=False)}
        for name, lengths, k in partition_cases()
    ]
    with open(os.path.join(out_dir, "partitions.json"), "w") as f:
        json.dump({"source": "RL2.utils.seqlen_balance.get_seqlen_balanced_partitions", "cases": partitions}, f)

    if sequences is not None:
        plans = []
        for name, lengths, dp, budget, pair in plan_cases():
            case = {"name": name, "lengths": lengths, "dpSize": dp, "maxTokensPerRank": budget, "pair": pair}
            case.update(run_planner(sequences, lengths, dp, budget, pair))
            plans.append(case)
        with open(os.path.join(out_dir, "plans.json"), "w") as f:
            json.dump({"source": "RL2.utils.sequences._tensor_dict_to_minibatches", "cases": plans}, f)
    print(f"wrote fixtures to {os.path.abspath(out_dir)}")


if __name__ == "__main__":
    main()
