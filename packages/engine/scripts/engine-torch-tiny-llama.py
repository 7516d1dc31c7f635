#!/usr/bin/python3
"""PyTorch reference for bench/engine.bench.ts: the same tiny Llama training step.

argv: batch seq steps threads. Prints JSON {"tokensPerSecond" (fastest step), "secondsPerStep" (mean), "bestSecondsPerStep", "peakRssMiB", "blas"}.
Same architecture as bench/engine-tiny-llama.ts (RMSNorm, rotary attention with causal mask,
SwiGLU MLP, untied head, cross-entropy, Adam 1e-3), float32.
"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn.functional as F

batch, seq, steps, threads = (int(a) for a in sys.argv[1:5])
torch.set_num_threads(threads)
torch.manual_seed(0)
V, H, L, NH, FF = 8192, 256, 4, 4, 768
hd = H // NH


def p(*shape, std=0.02):
    return torch.nn.Parameter(torch.randn(*shape) * std)


params = {"embed": p(V, H), "nf": torch.nn.Parameter(torch.ones(H)), "head": p(H, V)}
for i in range(L):
    params.update({f"{i}.n1": torch.nn.Parameter(torch.ones(H)), f"{i}.n2": torch.nn.Parameter(torch.ones(H))})
    for name, shape in {"wq": (H, H), "wk": (H, H), "wv": (H, H), "wo": (H, H), "wg": (H, FF), "wu": (H, FF), "wd": (FF, H)}.items():
        params[f"{i}.{name}"] = p(*shape)

inv = 10000 ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
ang = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
cos = torch.cat([ang.cos(), ang.cos()], -1)
sin = torch.cat([ang.sin(), ang.sin()], -1)
mask = torch.triu(torch.full((seq, seq), -1e9), 1)
tokens = torch.randint(0, V, (batch * seq,))
targets = torch.randint(0, V, (batch * seq,))


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def rot(x):
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def heads(x):
    return x.view(batch, seq, NH, hd).transpose(1, 2)


def loss_fn():
    x = params["embed"][tokens]
    for i in range(L):
        h = rms(x, params[f"{i}.n1"])
        q, k, v = (heads(h @ params[f"{i}.{w}"]) for w in ("wq", "wk", "wv"))
        q, k = rot(q), rot(k)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(batch * seq, H)
        x = x + o @ params[f"{i}.wo"]
        h2 = rms(x, params[f"{i}.n2"])
        x = x + (F.silu(h2 @ params[f"{i}.wg"]) * (h2 @ params[f"{i}.wu"])) @ params[f"{i}.wd"]
    return F.cross_entropy(rms(x, params["nf"]) @ params["head"], targets)


opt = torch.optim.Adam(params.values(), lr=1e-3)


def step():
    opt.zero_grad()
    loss = loss_fn()
    loss.backward()
    opt.step()


step()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
dt = sum(times) / len(times)
best = min(times)
blas = "%s (%d threads)" % (torch.__version__, torch.get_num_threads())
print(json.dumps({"tokensPerSecond": batch * seq / best, "secondsPerStep": dt, "bestSecondsPerStep": best, "peakRssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "blas": blas}))
