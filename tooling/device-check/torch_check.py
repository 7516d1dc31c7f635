"""The GPU device check, PyTorch's side: the same measures as check.ts on the same GPU, as the peer
a user would pick instead. A Qwen3-shaped decoder written out here (RMSNorm, rotary, grouped-query
attention with q/k norms, SwiGLU, tied embeddings), fp32 SFT with AdamW, greedy decode with a KV
cache. Prints one `TORCH {json}` line. `--shape tiny` for a small model (runs on a CPU too)."""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

TINY = sys.argv[-1] == "tiny"
S = (dict(hidden=64, layers=2, heads=4, kv=2, mlp=128, vocab=1000, seq=64, n=256) if TINY else
     dict(hidden=1024, layers=28, heads=16, kv=8, mlp=3072, vocab=151936, seq=512, n=4096))
dev = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)


class RMSNorm(torch.nn.Module):  # torch.nn.RMSNorm is 2.4+
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def attention(q, k, v, causal):
    if hasattr(F, "scaled_dot_product_attention"):  # 2.0+
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    w = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t, s = w.shape[-2:]
        w = w.masked_fill(torch.ones(t, s, device=w.device).triu(s - t + 1).bool(), float("-inf"))
    return w.softmax(-1) @ v


def matmul_tflops(n, dtype):
    a, b = (torch.randn(n, n, device=dev, dtype=dtype) for _ in range(2))
    a @ b
    sync()
    reps = 10
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync()
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e12


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        h, d = S["hidden"], S["hidden"] // S["heads"]
        self.d = d
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.q, self.k, self.v = lin(h, S["heads"] * d), lin(h, S["kv"] * d), lin(h, S["kv"] * d)
        self.o = lin(S["heads"] * d, h)
        self.gate, self.up, self.down = lin(h, S["mlp"]), lin(h, S["mlp"]), lin(S["mlp"], h)
        self.n1, self.n2 = RMSNorm(h, eps=1e-6), RMSNorm(h, eps=1e-6)
        self.qn, self.kn = RMSNorm(d, eps=1e-6), RMSNorm(d, eps=1e-6)

    def forward(self, x, cos, sin, cache=None):
        b, t, _ = x.shape
        y = self.n1(x)
        q = self.qn(self.q(y).view(b, t, -1, self.d)).transpose(1, 2)
        k = self.kn(self.k(y).view(b, t, -1, self.d)).transpose(1, 2)
        v = self.v(y).view(b, t, -1, self.d).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if cache is not None:
            if cache.get("k") is not None:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        rep = S["heads"] // S["kv"]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = attention(q, k, v, cache is None or t > 1)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        return x + self.down(F.silu(self.gate(self.n2(x))) * self.up(self.n2(x)))


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(S["vocab"], S["hidden"])
        self.blocks = torch.nn.ModuleList(Block() for _ in range(S["layers"]))
        self.norm = RMSNorm(S["hidden"], eps=1e-6)
        d = S["hidden"] // S["heads"]
        self.inv = 1.0 / (1e6 ** (torch.arange(0, d, 2, device=dev).float() / d))

    def forward(self, ids, start=0, caches=None):
        pos = torch.arange(start, start + ids.shape[1], device=dev).float()
        ang = torch.outer(pos, self.inv)
        cos, sin = ang.cos(), ang.sin()
        x = self.embed(ids)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, None if caches is None else caches[i])
        return self.norm(x) @ self.embed.weight.T


def sft():
    torch.manual_seed(0)
    model = Model().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, S["vocab"], (8, S["seq"]), device=dev)
    rates = []
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for _ in range(5):
        t = time.perf_counter()
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, S["vocab"]), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()
        rates.append(ids.numel() / (time.perf_counter() - t))
    peak = torch.cuda.max_memory_allocated() if dev == "cuda" else 0
    return model, sorted(rates[1:])[len(rates[1:]) // 2], peak


@torch.no_grad()
def decode(model, batch):
    prompt = torch.randint(3, 33, (batch, 32), device=dev)
    caches = [dict() for _ in model.blocks]
    logits = model(prompt, 0, caches)
    tok = logits[:, -1].argmax(-1, keepdim=True)
    sync()
    t = time.perf_counter()
    for step in range(64):
        logits = model(tok, 32 + step, caches)
        tok = logits[:, -1].argmax(-1, keepdim=True)
    sync()
    return batch * 64 / (time.perf_counter() - t)


out = {"device": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "torch": torch.__version__}
torch.backends.cuda.matmul.allow_tf32 = False  # true fp32, as WebGPU's f32
out["matmulF32Tflops"] = matmul_tflops(S["n"], torch.float32)
out["matmulF16Tflops"] = matmul_tflops(S["n"], torch.float16) if dev == "cuda" else None
model, out["tokensPerS"], out["peakGpuBytes"] = sft()
model.eval()
for b in (1, 8, 64):
    out[f"decodeBatch{b}"] = decode(model, b)
print("TORCH " + json.dumps(out))
