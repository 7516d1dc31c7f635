#!/usr/bin/env python3
"""Independent PyTorch reference for the LoRA fixtures of @rl2/models (fixtures/lora/).

Run with Debian's python3-torch 1.13 (no PEFT, no transformers):

    /usr/bin/python3 packages/models/scripts/make_lora_fixtures.py              # regenerate fixtures/lora/
    /usr/bin/python3 packages/models/scripts/make_lora_fixtures.py --verify-ts  # check the adapters TS wrote

LoRA is written out by hand as PEFT computes it (peft/tuners/lora/layer.py, Linear.forward):
y = x W^T + b + s * (dropout(x) A^T) B^T with A [r, in], B [out, r], s = alpha / r, or
alpha / sqrt(r) with use_rslora. Everything runs in float64 from float32-rounded inputs.
"""
import json
import math
import os
import re
import sys

import torch

import make_fixtures as mf

OUT = os.path.join(mf.FIX, "lora")


def f32(t):
    return t.to(torch.float32).to(torch.float64)


def scale_of(r, alpha, rslora):
    return alpha / math.sqrt(r) if rslora else alpha / r


def lora_linear(x, W, b, A, B, s):
    y = x @ W.T + (b if b is not None else 0)
    return y + s * ((x @ A.T) @ B.T)


def make_linear(name, rslora):
    """One adapted linear: y, and the gradients of sum(y * g) w.r.t. x, A and B."""
    gen = torch.Generator().manual_seed(77 + len(name))
    n, i, o, r, alpha = 5, 12, 7, 4, 8.0
    t = {
        "x": f32(torch.randn(n, i, generator=gen, dtype=torch.float64)),
        "weight": f32(0.3 * torch.randn(o, i, generator=gen, dtype=torch.float64)),
        "bias": f32(0.1 * torch.randn(o, generator=gen, dtype=torch.float64)),
        "lora_A": f32(0.3 * torch.randn(r, i, generator=gen, dtype=torch.float64)),
        "lora_B": f32(0.3 * torch.randn(o, r, generator=gen, dtype=torch.float64)),
        "g": f32(torch.randn(n, o, generator=gen, dtype=torch.float64)),
    }
    leaves = {k: t[k].clone().requires_grad_(True) for k in ("x", "lora_A", "lora_B", "weight")}
    s = scale_of(r, alpha, rslora)
    y = lora_linear(leaves["x"], leaves["weight"], t["bias"], leaves["lora_A"], leaves["lora_B"], s)
    (y * t["g"]).sum().backward()
    ref = {**t, "y": y.detach(), **{f"grad.{k}": v.grad for k, v in leaves.items()}}
    mf.write_safetensors(os.path.join(OUT, f"{name}.safetensors"), ref)
    return dict(rank=r, alpha=alpha, use_rslora=rslora, scale=s)


def forward_hidden_lora(cfg, P, ad, s, ids, pos, seg):
    """make_fixtures.forward_hidden with every adapted projection as lora_linear."""
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    inv = mf.inv_freq_for(cfg, d)
    T = ids.shape[0]
    allowed = (seg[:, None] == seg[None, :]) & (torch.arange(T)[None, :] <= torch.arange(T)[:, None])
    x = P["model.embed_tokens.weight"][ids]

    def lin(name, v):
        W, b = P[name + ".weight"], P.get(name + ".bias")
        if name + ".lora_A.weight" in ad:
            return lora_linear(v, W, b, ad[name + ".lora_A.weight"], ad[name + ".lora_B.weight"], s)
        return v @ W.T + (b if b is not None else 0)

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = mf.rms_norm(x, P[p + "input_layernorm.weight"], eps)
        q = lin(p + "self_attn.q_proj", h).view(T, nh, d)
        k = lin(p + "self_attn.k_proj", h).view(T, nkv, d)
        v = lin(p + "self_attn.v_proj", h).view(T, nkv, d)
        if cfg["model_type"] == "qwen3":
            q = mf.rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = mf.rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k = mf.rope(q, pos, inv), mf.rope(k, pos, inv)
        k = k.repeat_interleave(nh // nkv, dim=1)
        v = v.repeat_interleave(nh // nkv, dim=1)
        sc = torch.einsum("thd,shd->hts", q, k) / math.sqrt(d)
        sc = sc.masked_fill(~allowed[None], float("-inf"))
        a = torch.einsum("hts,shd->thd", sc.softmax(-1), v).reshape(T, nh * d)
        x = x + lin(p + "self_attn.o_proj", a)
        h = mf.rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        g = lin(p + "mlp.gate_proj", h)
        x = x + lin(p + "mlp.down_proj", torch.nn.functional.silu(g) * lin(p + "mlp.up_proj", h))
    return mf.rms_norm(x, P["model.norm.weight"], eps)


def make_model(family, targets, r, alpha, rslora):
    """Adapters on `targets` of fixtures/<family>: log-probs, and the gradients of every A and B."""
    cfg = json.load(open(os.path.join(mf.FIX, family, "config.json")))
    P = mf.read_safetensors(os.path.join(mf.FIX, family, "model.safetensors"))
    gen = torch.Generator().manual_seed(4321 + len(family))
    ad = {}
    for name, shape in mf.param_shapes(cfg).items():
        m = name[: -len(".weight")]
        if name.endswith(".weight") and m.split(".")[-1] in targets:
            o, i = shape
            ad[m + ".lora_A.weight"] = f32(0.2 * torch.randn(r, i, generator=gen, dtype=torch.float64))
            ad[m + ".lora_B.weight"] = f32(0.2 * torch.randn(o, r, generator=gen, dtype=torch.float64))
    s = scale_of(r, alpha, rslora)
    ids, pos, seg, tgt = mf.packed_inputs()
    w = torch.linspace(0.5, 1.5, ids.shape[0], dtype=torch.float64)
    leaves = {k: v.clone().requires_grad_(True) for k, v in ad.items()}
    hidden = forward_hidden_lora(cfg, P, leaves, s, ids, pos, seg)
    logits = mf.lm_logits(cfg, P, hidden)
    lp, ent = mf.logprobs_entropy(logits, tgt, mf.TEMPERATURE)
    loss = -(lp * w).sum() / w.sum() - 0.01 * ent.mean()
    loss.backward()
    name = f"{family}-model"
    mf.write_safetensors(os.path.join(OUT, f"{name}-adapter.safetensors"), ad)
    ref = {"logits": logits.detach(), "logprobs": lp.detach(), **{f"grad.{k}": v.grad for k, v in leaves.items()}}
    mf.write_safetensors(os.path.join(OUT, f"{name}.safetensors"), ref)
    return dict(family=family, target_modules=targets, rank=r, alpha=alpha, use_rslora=rslora, scale=s,
                loss=float(loss), loss_formula="-sum(w*logp)/sum(w) - 0.01*mean(entropy), w=linspace(0.5,1.5,T)")


def main():
    os.makedirs(OUT, exist_ok=True)
    meta = {
        "linear": make_linear("linear", False),
        "linear-rslora": make_linear("linear-rslora", True),
        "qwen3-model": make_model("qwen3", list(mf_targets()), 4, 8.0, False),
        "llama-model": make_model("llama", ["q_proj", "v_proj", "down_proj"], 2, 16.0, True),
    }
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta, indent=1))


KEY = re.compile(r"^base_model\.model\.(model\.layers\.\d+\.(?:self_attn|mlp)\.(\w+_proj))\.lora_([AB])\.weight$")


def verify_ts():
    """Reads fixtures/lora/ts-written/<family> as PEFT lays an adapter out (adapter_config.json;
    adapter_model.safetensors keys base_model.model.<module>.lora_A.weight [r, in] and
    .lora_B.weight [out, r]), runs the reference with the scale the config implies, and compares
    the logits with the reference of the adapters they were written from."""
    out = {}
    root = os.path.join(OUT, "ts-written")
    for family in ("qwen3", "llama"):
        folder = os.path.join(root, family)
        c = json.load(open(os.path.join(folder, "adapter_config.json")))
        assert c["peft_type"] == "LORA" and c["task_type"] == "CAUSAL_LM", c
        cfg = json.load(open(os.path.join(mf.FIX, c["base_model_name_or_path"], "config.json")))
        P = mf.read_safetensors(os.path.join(mf.FIX, c["base_model_name_or_path"], "model.safetensors"))
        raw = mf.read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
        ad, bad = {}, []
        for key, t in raw.items():
            m = KEY.match(key)
            if not m or m.group(2) not in c["target_modules"]:
                bad.append(key)
                continue
            o, i = P[m.group(1) + ".weight"].shape
            assert list(t.shape) == ([c["r"], i] if m.group(3) == "A" else [o, c["r"]]), (key, t.shape)
            ad[key[len("base_model.model."):]] = t
        s = scale_of(c["r"], c["lora_alpha"], c.get("use_rslora", False))
        ids, pos, seg, _ = mf.packed_inputs()
        logits = mf.lm_logits(cfg, P, forward_hidden_lora(cfg, P, ad, s, ids, pos, seg))
        ref = mf.read_safetensors(os.path.join(OUT, f"{family}-model.safetensors"))["logits"]
        out[family] = dict(tensors=len(raw), unexpected_keys=bad, scale=s,
                           max_abs_logit_diff=float((logits - ref).abs().max()))
    with open(os.path.join(root, "python-verified.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))


def mf_targets():
    return ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


if __name__ == "__main__":
    verify_ts() if "--verify-ts" in sys.argv else main()
