#!/usr/bin/env python3
"""Independent PyTorch reference for @rl2/models parity fixtures.

Run with Debian's python3-torch 1.13 (no `transformers`, no `safetensors` package needed):

    /usr/bin/python3 packages/models/scripts/make_fixtures.py            # regenerate fixtures/
    /usr/bin/python3 packages/models/scripts/make_fixtures.py --verify-ts # check the checkpoint TS wrote

The maths follows Hugging Face `modeling_llama.py`, `modeling_qwen2.py`, `modeling_qwen3.py`
(RMSNorm in float32, rotate-half RoPE incl. Llama 3 scaling, grouped-query attention with
repeat_kv, SwiGLU MLP), written from scratch here and computed in float64 so that the
reference is more precise than the float32 code under test.
"""
import json
import math
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures")

# ---------------------------------------------------------------- safetensors (plain code)
# Format: u64 little-endian header length N, N bytes of JSON header
# {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then raw bytes.
DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2), "F64": (torch.float64, 8)}


def tensor_bytes(t, dtype):
    t = t.detach().contiguous()
    if dtype == "F32":
        return t.to(torch.float32).numpy().tobytes()
    if dtype == "F16":
        return t.to(torch.float16).numpy().tobytes()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = metadata or {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path, keep_dtype=False):
    """Reads every tensor as float64, or as stored with keep_dtype (strict: checks offsets are
    contiguous and in range)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode())
    body = raw[8 + n :]
    out, end = {}, 0
    for name, info in sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == end, f"{path}: {name} starts at {b}, expected {end}"
        end = e
        torch_dtype, size = DTYPES[info["dtype"]]
        count = math.prod(info["shape"]) if info["shape"] else 1
        assert e - b == count * size, f"{path}: {name} has {e - b} bytes for shape {info['shape']}"
        chunk = bytearray(body[b:e])
        if info["dtype"] == "BF16":
            t = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(chunk, dtype=torch_dtype)
        out[name] = (t if keep_dtype else t.to(torch.float64)).reshape(info["shape"])
    assert end == len(body), f"{path}: {len(body) - end} trailing bytes"
    return out


def read_checkpoint(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(weight_map.values())):
            out.update(read_safetensors(os.path.join(folder, shard)))
        assert set(out) == set(weight_map), "index weight_map and shards disagree"
        return out
    return read_safetensors(os.path.join(folder, "model.safetensors"))


# ---------------------------------------------------------------- reference model
def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def inv_freq_for(cfg, head_dim):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rs = cfg.get("rope_scaling")
    if rs is None:
        return inv
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        return inv / rs["factor"]
    assert kind == "llama3", kind
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    lo_wl, hi_wl = old / lo, old / hi
    wl = 2 * math.pi / inv
    scaled = torch.where(wl > lo_wl, inv / factor, inv)
    smooth = (old / wl - lo) / (hi - lo)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wl >= hi_wl) & (wl <= lo_wl)
    return torch.where(medium, smoothed, scaled)


def rope(x, pos, inv):  # x [T, heads, d]
    f = pos.to(torch.float64)[:, None] * inv[None, :]
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * cos + rot * sin


def forward_hidden(cfg, P, ids, pos, seg):
    """One packed row: ids/pos/seg [T]; attention is causal inside each segment only."""
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    qwen3 = cfg["model_type"] == "qwen3"
    inv = inv_freq_for(cfg, d)
    T = ids.shape[0]
    allowed = (seg[:, None] == seg[None, :]) & (torch.arange(T)[None, :] <= torch.arange(T)[:, None])
    x = P["model.embed_tokens.weight"][ids]

    def lin(name, v):
        y = v @ P[name + ".weight"].T
        return y + P[name + ".bias"] if name + ".bias" in P else y

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        q = lin(p + "self_attn.q_proj", h).view(T, nh, d)
        k = lin(p + "self_attn.k_proj", h).view(T, nkv, d)
        v = lin(p + "self_attn.v_proj", h).view(T, nkv, d)
        if qwen3:
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, pos, inv), rope(k, pos, inv)
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(d)
        s = s.masked_fill(~allowed[None], float("-inf"))
        a = torch.einsum("hts,shd->thd", s.softmax(-1), v).reshape(T, nh * d)
        x = x + lin(p + "self_attn.o_proj", a)
        h = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        g = lin(p + "mlp.gate_proj", h)
        x = x + lin(p + "mlp.down_proj", torch.nn.functional.silu(g) * lin(p + "mlp.up_proj", h))
    return rms_norm(x, P["model.norm.weight"], eps)


def lm_logits(cfg, P, hidden):
    w = P["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else P["lm_head.weight"]
    return hidden @ w.T


def logprobs_entropy(logits, targets, temperature):
    lp = (logits / temperature).log_softmax(-1)
    return lp.gather(-1, targets[:, None])[:, 0], -(lp.exp() * lp).sum(-1)


# ---------------------------------------------------------------- fixtures
BASE = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, hidden_act="silu",
            initializer_range=0.02, bos_token_id=1, eos_token_id=2, torch_dtype="float32")

FAMILIES = {
    "llama": dict(BASE, architectures=["LlamaForCausalLM"], model_type="llama", rope_theta=500000.0,
                  tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=16)),
    "qwen2": dict(BASE, architectures=["Qwen2ForCausalLM"], model_type="qwen2", rope_theta=1000000.0,
                  tie_word_embeddings=True, use_sliding_window=False, sliding_window=4096, max_window_layers=2),
    "qwen3": dict(BASE, architectures=["Qwen3ForCausalLM"], model_type="qwen3", rope_theta=1000000.0, head_dim=16,
                  tie_word_embeddings=False, attention_bias=False, use_sliding_window=False, num_key_value_heads=1),
    "qwen2-critic": dict(BASE, architectures=["Qwen2ForTokenClassification"], model_type="qwen2", rope_theta=10000.0,
                         tie_word_embeddings=True, use_sliding_window=False, num_labels=1,
                         id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}),
}


def param_shapes(cfg):
    H, nh, nkv, I, V = (cfg[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size"))
    d = cfg.get("head_dim") or H // nh
    bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    s = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
                  p + "self_attn.q_proj.weight": [nh * d, H], p + "self_attn.k_proj.weight": [nkv * d, H],
                  p + "self_attn.v_proj.weight": [nkv * d, H], p + "self_attn.o_proj.weight": [H, nh * d],
                  p + "mlp.gate_proj.weight": [I, H], p + "mlp.up_proj.weight": [I, H], p + "mlp.down_proj.weight": [H, I]})
        if bias:
            s.update({p + "self_attn.q_proj.bias": [nh * d], p + "self_attn.k_proj.bias": [nkv * d], p + "self_attn.v_proj.bias": [nkv * d]})
        if cfg["model_type"] == "qwen3":
            s.update({p + "self_attn.q_norm.weight": [d], p + "self_attn.k_norm.weight": [d]})
    if cfg["architectures"][0].endswith("ForTokenClassification"):
        s.update({"score.weight": [1, H], "score.bias": [1]})
    elif not cfg.get("tie_word_embeddings"):
        s["lm_head.weight"] = [V, H]
    return s


def make_params(cfg, gen):
    P = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("norm.weight"):
            P[name] = 1.0 + 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
        else:  # larger than 0.02 so that attention patterns and logits are far from uniform
            P[name] = 0.2 * torch.randn(shape, generator=gen, dtype=torch.float64)
    # round through float32: the stored checkpoint is the exact model both sides run
    return {k: v.to(torch.float32).to(torch.float64) for k, v in P.items()}


SEQ_A = [1, 17, 99, 5, 64, 3, 77, 12, 45]
SEQ_B = [1, 8, 120, 33, 2, 91, 60]
TEMPERATURE = 0.7


def packed_inputs():
    ids = torch.tensor(SEQ_A + SEQ_B)
    pos = torch.tensor(list(range(len(SEQ_A))) + list(range(len(SEQ_B))))
    seg = torch.tensor([0] * len(SEQ_A) + [1] * len(SEQ_B))
    # targets: next token inside each sequence (last position of a sequence targets token 0)
    tgt = torch.tensor(SEQ_A[1:] + [0] + SEQ_B[1:] + [0])
    return ids, pos, seg, tgt


def make_family(name, cfg):
    gen = torch.Generator().manual_seed(1234 + len(name))
    P = make_params(cfg, gen)
    out = os.path.join(FIX, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), P)
    ids, pos, seg, tgt = packed_inputs()
    weights = torch.linspace(0.5, 1.5, ids.shape[0], dtype=torch.float64)
    leaves = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    hidden = forward_hidden(cfg, leaves, ids, pos, seg)
    ref = {}
    if "score.weight" in P:
        values = (hidden @ leaves["score.weight"].T + leaves["score.bias"])[:, 0]
        returns = torch.linspace(-1, 1, ids.shape[0], dtype=torch.float64)
        loss = ((values - returns) ** 2 * weights).sum()
        ref["values"] = values
    else:
        logits = lm_logits(cfg, leaves, hidden)
        lp, ent = logprobs_entropy(logits, tgt, TEMPERATURE)
        loss = -(lp * weights).sum() / weights.sum() - 0.01 * ent.mean()
        ref.update(logits=logits, logprobs=lp, entropy=ent)
    loss.backward()
    grads = {"grad." + k: v.grad for k, v in leaves.items()}
    write_safetensors(os.path.join(out, "reference.safetensors"), {**{k: v.detach() for k, v in ref.items()}, **grads})
    # separate forwards of a and b alone: the packed row must match these
    alone = {}
    for key, seq in (("a", SEQ_A), ("b", SEQ_B)):
        t = torch.tensor(seq)
        h = forward_hidden(cfg, P, t, torch.arange(len(seq)), torch.zeros(len(seq), dtype=torch.long))
        if "score.weight" in P:
            alone[key] = (h @ P["score.weight"].T + P["score.bias"])[:, 0].tolist()
        else:
            alone[key] = logprobs_entropy(lm_logits(cfg, P, h), torch.tensor(seq[1:] + [0]), TEMPERATURE)[0].tolist()
    meta = dict(input_ids=ids.tolist(), position_ids=pos.tolist(), segment_ids=seg.tolist(), targets=tgt.tolist(),
                loss_weights=weights.tolist(), temperature=TEMPERATURE, loss=float(loss), alone=alone,
                loss_formula=("sum(w*(values-returns)^2), returns=linspace(-1,1,T)" if "score.weight" in P
                              else "-sum(w*logp)/sum(w) - 0.01*mean(entropy)"))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return P


def make_low_precision(P, cfg):
    """Same llama weights as bf16 in 2 shards with an index, and fp16 single file, plus the exact
    fp32 values those dtypes round to (torch's own conversion) for comparison."""
    for dtype, folder, shards in (("BF16", "llama-bf16-sharded", 2), ("F16", "llama-fp16", 1)):
        out = os.path.join(FIX, folder)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(dict(cfg, torch_dtype="bfloat16" if dtype == "BF16" else "float16"), f, indent=2)
        names = sorted(P)
        if shards == 1:
            write_safetensors(os.path.join(out, "model.safetensors"), P, dtype)
        else:
            weight_map, total = {}, 0
            for s in range(shards):
                part = {n: P[n] for n in names[s::shards]}
                fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
                write_safetensors(os.path.join(out, fname), part, dtype)
                weight_map.update({n: fname for n in part})
                total += sum(v.numel() * 2 for v in part.values())
            with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        tdt = DTYPES[dtype][0]
        write_safetensors(os.path.join(out, "expected-fp32.safetensors"), {k: v.to(tdt).to(torch.float64) for k, v in P.items()})


def check_shards(path):
    """Shard layout as huggingface_hub splits it: metadata.total_size is the bytes of all tensors,
    and a shard over the limit holds a single tensor."""
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(index):
        return dict(shards=1, index_total_size_ok=True)
    with open(index) as f:
        meta = json.load(f)
    files = sorted(set(meta["weight_map"].values()))
    sizes = {}
    for fname in files:
        with open(os.path.join(path, fname), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n).decode())
        sizes[fname] = [v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"]
    total = sum(sum(v) for v in sizes.values())
    assert all(f"-of-{len(files):05d}.safetensors" in fname for fname in files), files
    return dict(shards=len(files), index_total_size_ok=meta["metadata"]["total_size"] == total,
                largest_multi_tensor_shard=max((sum(v) for v in sizes.values() if len(v) > 1), default=0))


def verify_ts():
    """Reads the checkpoints the TypeScript writer produced (fixtures/ts-written/*), runs this
    reference model on them and records the comparison in fixtures/ts-written/python-verified.json."""
    root = os.path.join(FIX, "ts-written")
    report = {}
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        P = read_checkpoint(path)
        expected = set(param_shapes(cfg))
        assert set(P) == expected, f"{folder}: names differ: {sorted(set(P) ^ expected)}"
        for k, shape in param_shapes(cfg).items():
            assert list(P[k].shape) == shape, f"{folder}: {k} shape {list(P[k].shape)} != {shape}"
        src = os.path.join(FIX, folder.split("@")[0])
        ids, pos, seg, tgt = packed_inputs()
        original = read_safetensors(os.path.join(src, "model.safetensors"))
        if "score.weight" in P:
            a = (forward_hidden(cfg, P, ids, pos, seg) @ P["score.weight"].T)[:, 0]
            b = (forward_hidden(cfg, original, ids, pos, seg) @ original["score.weight"].T)[:, 0]
        else:
            a = lm_logits(cfg, P, forward_hidden(cfg, P, ids, pos, seg))
            b = lm_logits(cfg, original, forward_hidden(cfg, original, ids, pos, seg))
        max_w = max(float((P[k] - original[k]).abs().max()) for k in P)
        # low-precision checkpoints must hold exactly what torch's own float32 -> bf16/fp16 rounding gives
        low = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(cfg.get("torch_dtype"))
        exact = low is not None and all(torch.equal(P[k], original[k].to(torch.float32).to(low).to(torch.float64)) for k in P)
        report[folder] = dict(tensors=len(P), max_abs_weight_diff=max_w, max_abs_output_diff=float((a - b).abs().max()),
                              generation_config=os.path.exists(os.path.join(path, "generation_config.json")),
                              torch_dtype=cfg.get("torch_dtype"), equals_torch_rounding=exact, **check_shards(path))
        print(folder, report[folder])
    with open(os.path.join(root, "python-verified.json"), "w") as f:
        json.dump(report, f, indent=1)


class Float64OnRead(dict):
    """Weights kept as read (bf16: 1.2 GB for the 0.6B shape) and widened to float64 per use,
    so the real-size reference needs no 4.8 GB float64 copy of the model."""

    def __getitem__(self, key):
        return super().__getitem__(key).to(torch.float64)


def read_checkpoint_raw(folder):
    """Like read_checkpoint (index + shards, same strict parser), keeping each tensor's stored dtype."""
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    out = Float64OnRead()
    for shard in sorted(set(weight_map.values())):
        out.update(read_safetensors(os.path.join(folder, shard), keep_dtype=True))
    assert set(out) == set(weight_map), "index weight_map and shards disagree"
    return out


REAL_PROMPT = [151643, 9707, 11, 1879, 0, 576, 3974, 13876, 38835, 34208, 916, 279, 15678, 5562]
REAL_NEW_TOKENS = 4


def make_real_size(folder):
    """fixtures/qwen3-0.6b-bf16/reference.json: greedy decoding of REAL_NEW_TOKENS tokens from
    REAL_PROMPT on the Qwen3-0.6B-shaped bf16 checkpoint in `folder` (written by
    scripts/real-size-checkpoint.ts), with the sha256 of its weight files so that the test
    knows it regenerated the same weights."""
    import hashlib

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    P = read_checkpoint_raw(folder)
    expected = param_shapes(cfg)
    assert set(P) == set(expected), sorted(set(P) ^ set(expected))
    assert all(dict.__getitem__(P, k).dtype == torch.bfloat16 for k in P), "expected bf16 weights"
    ids, greedy, greedy_lp, margins = list(REAL_PROMPT), [], [], []
    for _ in range(REAL_NEW_TOKENS):
        t = torch.tensor(ids)
        h = forward_hidden(cfg, P, t, torch.arange(len(ids)), torch.zeros(len(ids), dtype=torch.long))
        lp = lm_logits(cfg, P, h[-1:])[0].log_softmax(-1)
        top = lp.topk(2)
        greedy.append(int(top.indices[0]))
        greedy_lp.append(float(top.values[0]))
        margins.append(float(top.values[0] - top.values[1]))
        ids.append(greedy[-1])
        print("token", greedy[-1], "logprob", greedy_lp[-1], "margin to 2nd", margins[-1], flush=True)
    # teacher-forced logprobs of every next token of prompt + greedy (the last one predicts token 0)
    t = torch.tensor(ids)
    h = forward_hidden(cfg, P, t, torch.arange(len(ids)), torch.zeros(len(ids), dtype=torch.long))
    targets = ids[1:] + [0]
    forced = lm_logits(cfg, P, h).log_softmax(-1).gather(-1, torch.tensor(targets)[:, None])[:, 0]
    hashes = {}
    for fname in sorted(f for f in os.listdir(folder) if f.startswith("model")):
        with open(os.path.join(folder, fname), "rb") as f:
            hashes[fname] = hashlib.file_digest(f, "sha256").hexdigest() if hasattr(hashlib, "file_digest") else hashlib.sha256(f.read()).hexdigest()
    out = os.path.join(FIX, "qwen3-0.6b-bf16")
    os.makedirs(out, exist_ok=True)
    ref = dict(config=cfg, sha256=hashes, prompt_ids=REAL_PROMPT, greedy_ids=greedy, greedy_logprobs=greedy_lp,
               greedy_margins=margins, targets=targets, target_logprobs=forced.tolist(),
               computed_by="scripts/make_fixtures.py --real-size (float64 torch reference on the bf16 weights)")
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
    print("written", os.path.normpath(out))


def main():
    torch.set_default_dtype(torch.float64)
    if "--verify-ts" in sys.argv:
        verify_ts()
        return
    if "--real-size" in sys.argv:
        make_real_size(sys.argv[sys.argv.index("--real-size") + 1])
        return
    os.makedirs(FIX, exist_ok=True)
    for name, cfg in FAMILIES.items():
        P = make_family(name, cfg)
        if name == "llama":
            make_low_precision(P, cfg)
    # reader self-check: what we wrote parses back bit-exactly
    back = read_safetensors(os.path.join(FIX, "llama", "model.safetensors"))
    ref = make_params(FAMILIES["llama"], torch.Generator().manual_seed(1234 + len("llama")))
    assert all(torch.equal(back[k], ref[k]) for k in ref)
    print("fixtures written to", os.path.normpath(FIX))


if __name__ == "__main__":
    main()
