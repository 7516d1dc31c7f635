#!/usr/bin/python3
"""Reference gradients for the engine's gradient fixes and kernels, from PyTorch (float64).

Writes src/fixtures/engine-grads.json. Each case: named inputs (values + shape), the
op, and d(sum(op(inputs) * w))/d(input) for every float input. Run: /usr/bin/python3 scripts/engine-make-fixtures.py
"""
import json
import os

import torch

torch.manual_seed(3)


def t(*shape, scale=1.0):
    # rounded to float32 so the TypeScript side feeds exactly the same inputs
    v = ((torch.rand(tuple(shape), dtype=torch.float64) * 2 - 1) * scale).float().double()
    return v.requires_grad_(True)


def case(name, op, inputs, kwargs, fn):
    out = fn(*inputs.values())
    w = torch.rand(out.shape, dtype=torch.float64) * 2 - 1
    (out * w).sum().backward()
    return {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": {
            k: {"shape": list(v.shape), "values": v.detach().flatten().tolist(), "dtype": "int32" if v.dtype == torch.int64 else "float32"}
            for k, v in inputs.items()
        },
        "w": {"shape": list(w.shape), "values": w.flatten().tolist()},
        "out": {"shape": list(out.shape), "values": out.detach().flatten().tolist()},
        "grads": {k: v.grad.flatten().tolist() for k, v in inputs.items() if v.dtype == torch.float64},
    }


def mm(ta, tb):
    def f(a, b):
        a2 = a.transpose(-1, -2) if ta else a
        b2 = b.transpose(-1, -2) if tb else b
        return torch.matmul(a2, b2)
    return f


ids = torch.tensor([[2, 4], [0, 2]])
cases = [
    case("matMul 3D x 2D", "matMul", {"a": t(2, 3, 4), "b": t(4, 5)}, {"transposeA": False, "transposeB": False}, mm(False, False)),
    case("matMul 3D^T x 2D", "matMul", {"a": t(2, 4, 3), "b": t(4, 5)}, {"transposeA": True, "transposeB": False}, mm(True, False)),
    case("matMul 2D x 3D^T", "matMul", {"a": t(3, 4), "b": t(2, 5, 4)}, {"transposeA": False, "transposeB": True}, mm(False, True)),
    case("matMul [1,3,4] x [2,4,5]", "matMul", {"a": t(1, 3, 4), "b": t(2, 4, 5)}, {"transposeA": False, "transposeB": False}, mm(False, False)),
    case("maximum broadcast", "maximum", {"a": t(3, 4), "b": t(4)}, {}, torch.maximum),
    case("minimum broadcast", "minimum", {"a": t(3, 4), "b": t(1, 4)}, {}, torch.minimum),
    case("squaredDifference scalar", "squaredDifference", {"a": t(2, 3), "b": t()}, {}, lambda a, b: (a - b) ** 2),
    case("softmax", "softmax", {"x": t(2, 5, scale=3.0)}, {}, lambda x: torch.softmax(x, -1)),
    case("logSumExp", "logSumExp", {"x": t(3, 4, scale=3.0)}, {}, lambda x: torch.logsumexp(x, -1)),
    case("softmaxCrossEntropy (label -1 masked)", "softmaxCrossEntropy", {"x": t(5, 7, scale=3.0), "labels": torch.tensor([3, 0, -1, 6, 2])}, {},
         lambda x, l: torch.nn.functional.cross_entropy(x, l, reduction="none", ignore_index=-1)),
    case("embedding gather", "gather", {"x": t(6, 3), "indices": ids}, {}, lambda x, i: x[i]),
]
out = os.path.join(os.path.dirname(__file__), "..", "src", "engine", "fixtures", "engine-grads.json")
with open(out, "w") as f:
    json.dump({"generator": "scripts/engine-make-fixtures.py (torch %s, float64)" % torch.__version__, "cases": cases}, f)
print("wrote", os.path.normpath(out), len(cases), "cases")
