#!/usr/bin/env python3
"""PyTorch 1.13 CPU side of `pnpm bench decode`: a Qwen3-0.6B-shaped decoder (random float32
weights, q/k RMSNorm, grouped-query attention, tied head) with a KV cache: greedy decode
tokens/s per batch, prefill tokens/s of a 512-token prompt, peak RSS, and the read bandwidth
of a 1 GiB sum and the float32 GFLOP/s of a 2048^3 product with the same threads. Prints one JSON line. Usage:
    python3 bench_decode_torch.py --threads N --new N --batches 1,8,64
"""
import argparse
import json
import resource
import time

import torch

V, H, L, NH, NKV, D, FF = 151936, 1024, 28, 16, 8, 128, 3072
PROMPT, PREFILL = 16, 512


def rms(x, w):
    return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


def tables(pos):
    inv = 1.0 / (1e6 ** (torch.arange(0, D, 2).float() / D))
    f = pos.float()[..., None] * inv
    e = torch.cat([f, f], -1)
    return e.cos()[:, None], e.sin()[:, None]  # [B, 1, T, D]


class Layer:
    def __init__(self, g):
        r = lambda *s: torch.randn(*s, generator=g) * 0.02
        self.q, self.k, self.v = r(NH * D, H), r(NKV * D, H), r(NKV * D, H)
        self.o, self.gate, self.up, self.down = r(H, NH * D), r(FF, H), r(FF, H), r(H, FF)
        self.n1, self.n2, self.qn, self.kn = torch.ones(H), torch.ones(H), torch.ones(D), torch.ones(D)

    def __call__(self, x, cos, sin, cache):
        B, T, _ = x.shape
        h = rms(x, self.n1)
        q = rope(rms((h @ self.q.T).view(B, T, NH, D), self.qn).transpose(1, 2), cos, sin)
        k = rope(rms((h @ self.k.T).view(B, T, NKV, D), self.kn).transpose(1, 2), cos, sin)
        v = (h @ self.v.T).view(B, T, NKV, D).transpose(1, 2)
        if "k" in cache:
            k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
        cache["k"], cache["v"] = k, v
        kk, vv = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
        s = q @ kk.transpose(-1, -2) / D**0.5
        if T > 1:
            s = s + torch.full((T, T), float("-inf")).triu(1)
        a = s.softmax(-1) @ vv
        x = x + a.transpose(1, 2).reshape(B, T, NH * D) @ self.o.T
        h = rms(x, self.n2)
        return x + (torch.nn.functional.silu(h @ self.gate.T) * (h @ self.up.T)) @ self.down.T


def forward(layers, embed, norm, ids, start, caches):
    x = embed[ids]
    pos = torch.arange(start, start + ids.shape[1]).expand(ids.shape[0], -1)
    cos, sin = tables(pos)
    for layer, cache in zip(layers, caches):
        x = layer(x, cos, sin, cache)
    return rms(x[:, -1], norm) @ embed.T


def decode_rate(layers, embed, norm, batch, new):
    ids = (torch.arange(batch)[:, None] * 131 + torch.arange(PROMPT) * 17 + 1) % V
    caches = [{} for _ in layers]
    nxt = forward(layers, embed, norm, ids, 0, caches).argmax(-1)
    t0 = time.perf_counter()
    for i in range(new - 1):
        nxt = forward(layers, embed, norm, nxt[:, None], PROMPT + i, caches).argmax(-1)
    return batch * (new - 1) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--batches", default="1,8,64")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    buf = torch.ones(1 << 28)
    bandwidth = 0.0
    for op in (torch.sum, lambda b: torch.dot(b, b)) * 3:  # best of 6 reads of 1 GiB
        t0 = time.perf_counter()
        op(buf)
        bandwidth = max(bandwidth, buf.numel() * 4 / (time.perf_counter() - t0) / 1e9)
    del buf
    a2, b2 = torch.randn(2048, 2048), torch.randn(2048, 2048)
    sgemm = 0.0
    for _ in range(3):  # best of 3 float32 2048^3 products: the compute limit
        t0 = time.perf_counter()
        a2 @ b2
        sgemm = max(sgemm, 2 * 2048**3 / (time.perf_counter() - t0) / 1e9)
    del a2, b2
    g = torch.Generator().manual_seed(1)
    layers = [Layer(g) for _ in range(L)]
    embed, norm = torch.randn(V, H, generator=g) * 0.02, torch.ones(H)
    decode = {}
    with torch.no_grad():
        for b in [int(x) for x in a.batches.split(",")]:
            decode[b] = decode_rate(layers, embed, norm, b, max(4, a.new // 2) if b >= 64 else a.new)
        ids = (torch.arange(PREFILL)[None] * 31 + 7) % V
        t0 = time.perf_counter()
        forward(layers, embed, norm, ids, 0, [{} for _ in layers]).argmax(-1)
        prefill = PREFILL / (time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = {"engine": "PyTorch 1.13 float32", "decode": decode, "prefill": prefill, "peakRssMb": rss, "bandwidthGbPerS": bandwidth, "sgemmGflopS": sgemm}
    print(json.dumps(row))


if __name__ == "__main__":
    main()
