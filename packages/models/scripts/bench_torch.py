#!/usr/bin/env python3
"""PyTorch 1.13 CPU side of `pnpm bench models`: the same tiny Llama, trained with AdamW and
sampled with a KV cache. Prints one JSON line. Usage:
    python3 bench_torch.py train|generate|profile --threads N [--steps S] [--top K]
"""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn.functional as F

V, H, L, NH, FF = 8192, 256, 4, 4, 768
D = H // NH


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = torch.nn.Parameter(torch.ones(H))
        self.n2 = torch.nn.Parameter(torch.ones(H))
        self.q, self.k, self.v, self.o = (torch.nn.Linear(H, H, bias=False) for _ in range(4))
        self.gate, self.up = torch.nn.Linear(H, FF, bias=False), torch.nn.Linear(H, FF, bias=False)
        self.down = torch.nn.Linear(FF, H, bias=False)

    def forward(self, x, cos, sin, mask, cache=None):
        B, T, _ = x.shape
        h = rms(x, self.n1)
        q = rope(self.q(h).view(B, T, NH, D).transpose(1, 2), cos, sin)
        k = rope(self.k(h).view(B, T, NH, D).transpose(1, 2), cos, sin)
        v = self.v(h).view(B, T, NH, D).transpose(1, 2)
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], 2)
                v = torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        a = ((q @ k.transpose(-1, -2)) / math.sqrt(D) + mask).softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, H))
        h = rms(x, self.n2)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def rms(x, w):
    return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


def tables(pos):
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
    f = pos.float()[:, None] * inv[None]
    e = torch.cat([f, f], -1)
    return e.cos(), e.sin()


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, H)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.norm = torch.nn.Parameter(torch.ones(H))
        self.head = torch.nn.Linear(H, V, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)

    def forward(self, ids, start=0, caches=None):
        T = ids.shape[1]
        cos, sin = tables(torch.arange(start, start + T))
        total = start + T
        mask = torch.full((T, total), float("-inf")).triu(start + 1)
        x = self.emb(ids)
        for i, b in enumerate(self.blocks):
            x = b(x, cos, sin, mask, None if caches is None else caches[i])
        return self.head(rms(x, self.norm)).float()


def train(args):
    torch.manual_seed(0)
    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(0, V, (args.batch, args.seq + 1))
    times, cpu = [], 0.0
    for s in range(args.steps + 1):
        t0 = time.perf_counter()
        c0 = time.process_time()
        logits = m(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if s > 0:
            cpu += time.process_time() - c0
    dt = sum(times[1:]) / args.steps
    return dict(tokens_per_s=args.batch * args.seq / dt, tokens_per_cpu_s=args.batch * args.seq * args.steps / cpu, s_per_step=dt, loss=float(loss))


def profile(args):
    """CPU ms per step of forward, backward and optimizer, and the ops with the most self CPU time."""
    torch.manual_seed(0)
    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(0, V, (args.batch, args.seq + 1))
    phases = dict(forward=0.0, backward=0.0, optimizer=0.0)

    def step(timed):
        marks = [time.process_time()]
        logits = m(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
        marks.append(time.process_time())
        opt.zero_grad()
        loss.backward()
        marks.append(time.process_time())
        opt.step()
        marks.append(time.process_time())
        if timed:
            for i, k in enumerate(phases):
                phases[k] += (marks[i + 1] - marks[i]) * 1000 / args.steps

    step(False)
    for _ in range(args.steps):
        step(True)
    with torch.autograd.profiler.profile() as prof:
        step(False)
    ops = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:args.top]
    top = [dict(name=e.key, calls=e.count, self_cpu_ms=e.self_cpu_time_total / 1000) for e in ops]
    return dict(phases_cpu_ms=phases, top_ops=top)


@torch.no_grad()
def generate(args):
    torch.manual_seed(0)
    m = Model().eval()
    prompts = torch.randint(0, V, (args.batch, args.prompt))
    t0 = time.perf_counter()
    c0 = time.process_time()
    caches = [dict() for _ in range(L)]
    logits = m(prompts, 0, caches)[:, -1]
    out = []
    for i in range(args.new):
        tok = torch.multinomial(logits.softmax(-1), 1)
        out.append(tok)
        if i + 1 < args.new:
            logits = m(tok, args.prompt + i, caches)[:, -1]
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return dict(tokens_per_s=args.batch * args.new / dt, tokens_per_cpu_s=args.batch * args.new / cpu, seconds=dt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "generate", "profile"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res = dict(train=train, generate=generate, profile=profile)[args.mode](args)
    res.update(threads=args.threads, peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, torch=torch.__version__)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
