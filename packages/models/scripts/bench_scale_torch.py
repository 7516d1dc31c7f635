#!/usr/bin/env python3
"""PyTorch 1.13 CPU side of `pnpm bench scale`: the same Qwen3-shaped checkpoint that
`rl2 init-model` wrote, trained and sampled the way a PyTorch user would (float32 weights,
full-vocabulary logits + cross-entropy, torch.optim.AdamW, clip_grad_norm_, per-layer
torch.utils.checkpoint as rl2's actor.gradient_checkpointing). No transformers or safetensors
package: safetensors are read and written tensor by tensor here. Prints one JSON line.

    bench_scale_torch.py sft DIR --data STEPS.json [--save OUT] [--micro M] [--max-steps N] [--threads N]
    bench_scale_torch.py resume OUT --data STEPS.json [--threads N]   # optimizer.pt + model from OUT
    bench_scale_torch.py generate DIR --batch B --prompt P --new N
    bench_scale_torch.py grpo DIR --data STEPS.json --group G --new N

STEPS.json (written by the bench from rl2's own tokenization): {"steps": [[{"ids": [...],
"mask": [...]}, ...], ...]} one list of sequences per optimizer step, packed into one row with
attention restarted per sequence (as rl2 packs a micro-batch); `mask` marks trained targets.
`--micro M` splits each step's sequences into M micro-batches whose gradients are accumulated
(each loss divided by the whole step's trained tokens, as rl2's global-mean scaling).
"""
import argparse
import json
import math
import os
import resource
import struct
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

BF16 = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


# ---------------------------------------------------------------- safetensors, tensor by tensor
def read_checkpoint(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for fname in files:
        with open(os.path.join(folder, fname), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                b, e = info["data_offsets"]
                f.seek(8 + n + b)
                raw = bytearray(e - b)
                f.readinto(raw)
                dt = BF16[info["dtype"]]
                t = torch.frombuffer(raw, dtype=torch.int16).view(dt) if dt != torch.float32 else torch.frombuffer(raw, dtype=torch.float32)
                out[name] = t.reshape(info["shape"]).float()  # one float32 tensor per weight
    return out


def write_safetensors_bf16(path, state):
    """save_pretrained(torch_dtype=bfloat16)-like: one bf16 copy of one tensor at a time."""
    header, off = {}, 0
    for name, t in state.items():
        size = t.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + size]}
        off += size
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for t in state.values():
            f.write(t.detach().to(torch.bfloat16).view(torch.int16).numpy().tobytes())


# ---------------------------------------------------------------- Qwen3 decoder
def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


class Layer(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I = cfg["hidden_size"], cfg["intermediate_size"]
        self.nh, self.nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.d = cfg.get("head_dim") or H // self.nh
        self.eps = cfg["rms_norm_eps"]
        # Qwen2: q/k/v biases and no q/k norms; Qwen3: the reverse
        self.qwen2 = cfg.get("model_type") == "qwen2"
        lin = lambda i, o, bias=False: torch.nn.Linear(i, o, bias=bias)
        qkv = self.qwen2
        self.q, self.k, self.v = lin(H, self.nh * self.d, qkv), lin(H, self.nkv * self.d, qkv), lin(H, self.nkv * self.d, qkv)
        self.o = lin(self.nh * self.d, H)
        self.gate, self.up, self.down = lin(H, I), lin(H, I), lin(I, H)
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(H)), torch.nn.Parameter(torch.ones(H))
        if not self.qwen2:
            self.qn, self.kn = torch.nn.Parameter(torch.ones(self.d)), torch.nn.Parameter(torch.ones(self.d))

    def qk_norm(self, t, w):
        return t if self.qwen2 else rms(t, w, self.eps)

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        B, T, _ = x.shape
        h = rms(x, self.n1, self.eps)
        q = rotate(self.qk_norm(self.q(h).view(B, T, self.nh, self.d), getattr(self, "qn", None)).transpose(1, 2), cos, sin)
        k = rotate(self.qk_norm(self.k(h).view(B, T, self.nkv, self.d), getattr(self, "kn", None)).transpose(1, 2), cos, sin)
        v = self.v(h).view(B, T, self.nkv, self.d).transpose(1, 2)
        if cache is not None:  # preallocated [B, nkv, max, d]
            cache[0][:, :, start : start + T] = k
            cache[1][:, :, start : start + T] = v
            k, v = cache[0][:, :, : start + T], cache[1][:, :, : start + T]
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = ((q @ k.transpose(-1, -2)) / math.sqrt(self.d)).masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, -1))
        h = rms(x, self.n2, self.eps)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.emb = torch.nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = torch.nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.norm = torch.nn.Parameter(torch.ones(cfg["hidden_size"]))
        d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        self.inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2).float() / d))

    def hf_names(self):
        names = {"model.embed_tokens.weight": self.emb.weight, "model.norm.weight": self.norm}
        for i, l in enumerate(self.layers):
            p = f"model.layers.{i}."
            for hf, t in (("input_layernorm", l.n1), ("post_attention_layernorm", l.n2)):
                names[p + hf + ".weight"] = t
            if l.qwen2:
                for hf, m in (("self_attn.q_proj", l.q), ("self_attn.k_proj", l.k), ("self_attn.v_proj", l.v)):
                    names[p + hf + ".bias"] = m.bias
            else:
                names[p + "self_attn.q_norm.weight"], names[p + "self_attn.k_norm.weight"] = l.qn, l.kn
            for hf, m in (("self_attn.q_proj", l.q), ("self_attn.k_proj", l.k), ("self_attn.v_proj", l.v), ("self_attn.o_proj", l.o),
                          ("mlp.gate_proj", l.gate), ("mlp.up_proj", l.up), ("mlp.down_proj", l.down)):
                names[p + hf + ".weight"] = m.weight
        return names

    def load(self, weights):
        with torch.no_grad():
            for name, p in self.hf_names().items():
                p.copy_(weights.pop(name))

    def tables(self, pos):
        f = pos.float()[..., None] * self.inv
        e = torch.cat([f, f], -1)
        return e.cos()[:, None], e.sin()[:, None]  # [B, 1, T, d]

    def hidden(self, ids, pos, mask, recompute=False, caches=None, start=0):
        cos, sin = self.tables(pos)
        x = self.emb(ids)
        for i, l in enumerate(self.layers):
            if recompute:
                x = checkpoint(l, x, cos, sin, mask)
            else:
                x = l(x, cos, sin, mask, None if caches is None else caches[i], start)
        return rms(x, self.norm, self.cfg["rms_norm_eps"])

    def logits(self, h):
        return h @ self.emb.weight.T  # tied embeddings (Qwen3-0.6B)


def packed(seqs):
    """One row: ids, positions restarting per sequence, block-causal mask, targets, loss mask."""
    ids, pos, seg, tgt, msk = [], [], [], [], []
    for s, q in enumerate(seqs):
        n = len(q["ids"])
        ids += q["ids"]
        pos += list(range(n))
        seg += [s] * n
        tgt += q["ids"][1:] + [0]
        msk += q["mask"]
    ids, pos, seg = torch.tensor([ids]), torch.tensor([pos]), torch.tensor(seg)
    T = seg.shape[0]
    mask = (seg[:, None] == seg[None, :]) & (torch.arange(T)[None, :] <= torch.arange(T)[:, None])
    return ids, pos, mask, torch.tensor(tgt), torch.tensor(msk, dtype=torch.float32)


def load_model(folder):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    m = Model(cfg)
    m.load(read_checkpoint(folder))
    return m


def sft_steps(m, opt, steps, micro=1):
    times, tokens, losses = [], 0, []
    for seqs in steps:
        parts = [seqs[i::micro] for i in range(micro)] if micro > 1 else [seqs]
        trained = sum(sum(q["mask"]) for q in seqs)
        t0 = time.perf_counter()
        opt.zero_grad()
        total = 0.0
        for part in parts:
            ids, pos, mask, tgt, msk = packed(part)
            logits = m.logits(m.hidden(ids, pos, mask[None, None], recompute=True))[0]
            loss = (F.cross_entropy(logits, tgt, reduction="none") * msk).sum() / trained
            loss.backward()  # accumulates into p.grad
            del logits
            total += float(loss)
            tokens += ids.shape[1]
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(total)
    return dict(tokens_per_s=tokens / sum(times), step_s=times, loss=losses)


def make_opt(m):
    return torch.optim.AdamW(m.parameters(), lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def sft(args):
    m = load_model(args.dir)
    opt = make_opt(m)
    res = sft_steps(m, opt, json.load(open(args.data))["steps"][: args.max_steps], args.micro)
    if args.save is None:
        return res
    t0 = time.perf_counter()
    os.makedirs(args.save, exist_ok=True)
    write_safetensors_bf16(os.path.join(args.save, "model.safetensors"), m.hf_names())
    with open(os.path.join(args.dir, "config.json")) as f, open(os.path.join(args.save, "config.json"), "w") as g:
        g.write(f.read())
    torch.save(opt.state_dict(), os.path.join(args.save, "optimizer.pt"))
    res["save_s"] = time.perf_counter() - t0
    return res


def resume(args):
    m = load_model(args.dir)
    opt = make_opt(m)
    opt.load_state_dict(torch.load(os.path.join(args.dir, "optimizer.pt")))
    return sft_steps(m, opt, json.load(open(args.data))["steps"])


@torch.no_grad()
def sample(m, prompts, new, temperature):
    """KV-cache decoding of a [B, P] batch: greedy (temperature 0) or sampled."""
    B, P = prompts.shape
    cfg = m.cfg
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    caches = [(torch.zeros(B, cfg["num_key_value_heads"], P + new, d), torch.zeros(B, cfg["num_key_value_heads"], P + new, d)) for _ in m.layers]
    causal = torch.ones(P, P, dtype=torch.bool).tril()[None, None]
    h = m.hidden(prompts, torch.arange(P).expand(B, P), causal, caches=caches)[:, -1]
    out = []
    for i in range(new):
        logits = m.logits(h)
        tok = logits.argmax(-1, keepdim=True) if temperature == 0 else torch.multinomial((logits / temperature).softmax(-1), 1)
        out.append(tok)
        if i + 1 < new:
            h = m.hidden(tok, torch.full((B, 1), P + i), torch.ones(1, 1, 1, P + i + 1, dtype=torch.bool), caches=caches, start=P + i)[:, -1]
    return torch.cat(out, 1)


def generate(args):
    m = load_model(args.dir).eval()
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(0, 150000, (args.batch, args.prompt), generator=g)
    sample(m, prompts[:1, :4], 1, 0)  # as the rl2 side: a first small request out of the way
    t0, c0 = time.perf_counter(), time.process_time()
    sample(m, prompts, args.new, 0)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(tokens_per_s=args.batch * args.new / dt, tokens_per_cpu_s=args.batch * args.new / cpu, seconds=dt)


def grpo(args):
    """One GRPO step on the first two prompts: sample `group` responses per prompt, reward, group-mean advantages
    (Dr. GRPO), old log-probs, clipped policy-gradient loss over response tokens, AdamW."""
    m = load_model(args.dir)
    opt = make_opt(m)
    prompts = [q["ids"][: args.prompt] for q in json.load(open(args.data))["steps"][0][:2]]
    t0 = time.perf_counter()
    P = min(len(p) for p in prompts)
    batch = torch.tensor([p[:P] for p in prompts for _ in range(args.group)])
    torch.manual_seed(0)
    m.eval()
    resp = sample(m, batch, args.new, 1.0)
    gen_s = time.perf_counter() - t0
    rewards = (resp % 2 == 0).float().mean(1)  # a stand-in verifiable reward
    adv = (rewards.view(-1, args.group) - rewards.view(-1, args.group).mean(1, keepdim=True)).view(-1)
    ids = torch.cat([batch, resp], 1)
    B, T = ids.shape
    pos = torch.arange(T).expand(B, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()[None, None]
    tgt = torch.cat([ids[:, 1:], ids[:, :1]], 1)
    msk = torch.zeros(B, T)
    msk[:, P - 1 : T - 1] = 1
    m.train()
    t1 = time.perf_counter()
    with torch.no_grad():
        old = torch.log_softmax(m.logits(m.hidden(ids, pos, causal)), -1).gather(-1, tgt[..., None])[..., 0]
    logp = torch.log_softmax(m.logits(m.hidden(ids, pos, causal, recompute=True)), -1).gather(-1, tgt[..., None])[..., 0]
    ratio = (logp - old).exp()
    a = adv[:, None]
    loss = (-torch.min(ratio * a, ratio.clamp(0.8, 1.2) * a) * msk).sum() / msk.sum()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    dt = time.perf_counter() - t0
    update_s = time.perf_counter() - t1
    return dict(seconds=dt, generate_s=gen_s, update_s=update_s, update_tokens_per_s=B * T / update_s, generated=B * args.new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["sft", "resume", "generate", "grpo"])
    ap.add_argument("dir")
    ap.add_argument("--data")
    ap.add_argument("--save")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--micro", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res = dict(sft=sft, resume=resume, generate=generate, grpo=grpo)[args.mode](args)
    res.update(threads=args.threads, peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, torch=torch.__version__)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
