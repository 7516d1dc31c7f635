#!/usr/bin/env python3
"""PyTorch 1.13 side of `pnpm bench lora`: the SFT steps of bench_scale_torch.py (the same
hand-written Qwen3, recomputed layers, packed rows, AdamW, clipping at 1.0), as full fine-tuning
or with LoRA adapters written out by hand (PEFT's math: y = W x + s B A x, A kaiming-uniform
a=sqrt(5), B zeros, s = alpha / r) on the projections, the base frozen.

    /usr/bin/python3 packages/trainers/scripts/bench_lora_torch.py MODEL_DIR --data steps.json [--rank R --alpha A]
        [--base-dtype bfloat16 --compute fp32|autocast]

--base-dtype bfloat16 (LoRA only) keeps the frozen base in bfloat16 as the checkpoint stores it (the
model built without its random init, the tensors read one at a time; norms and biases float32):
--compute fp32 widens each weight to float32 in the layer that uses it (float32 activations and
products), --compute autocast runs under torch.autocast("cpu", torch.bfloat16).

Prints one JSON line: tokens_per_s, step_s, loss, peak_rss_mib, trainable parameters.
"""
import argparse
import json
import math
import os
import resource
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "scripts"))
import bench_scale_torch as bst  # noqa: E402

TARGETS = ("q", "k", "v", "o", "gate", "up", "down")  # q_proj ... down_proj in bench_scale_torch's Layer


class LoraLinear(torch.nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base, self.s = base, alpha / r
        self.A = torch.nn.Parameter(torch.empty(r, base.in_features))
        self.B = torch.nn.Parameter(torch.zeros(base.out_features, r))
        torch.nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))

    def forward(self, x):
        return self.base(x) + self.s * ((x @ self.A.T) @ self.B.T)


class Widened(torch.nn.Linear):
    """A frozen 16-bit Linear computing in its input's dtype (the weight cast per call)."""

    def forward(self, x):
        b = None if self.bias is None else self.bias.to(x.dtype)
        return torch.nn.functional.linear(x, self.weight.to(x.dtype), b)


def bf16_model(folder):
    """bench_scale_torch's Model with bfloat16 matrices as stored, float32 vectors, no float32 copy."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    init = torch.nn.init
    saved = init.kaiming_uniform_, init.uniform_, init.normal_
    init.kaiming_uniform_ = init.uniform_ = init.normal_ = lambda t, *a, **k: t  # loaded below
    torch.set_default_dtype(torch.bfloat16)
    try:
        m = bst.Model(cfg)
    finally:
        torch.set_default_dtype(torch.float32)
        init.kaiming_uniform_, init.uniform_, init.normal_ = saved
    for mod in m.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None and p.dim() == 1:
                mod._parameters[name] = torch.nn.Parameter(p.detach().float())
        if type(mod) is torch.nn.Linear:
            mod.__class__ = Widened
    m.inv = m.inv.float()
    names = m.hf_names()
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    with torch.no_grad():
        for fname in files:
            with open(os.path.join(folder, fname), "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                for name, info in json.loads(f.read(n)).items():
                    if name not in names:
                        continue
                    b, e = info["data_offsets"]
                    f.seek(8 + n + b)
                    raw = bytearray(e - b)
                    f.readinto(raw)
                    t = torch.frombuffer(raw, dtype=torch.int16 if info["dtype"] != "F32" else torch.float32)
                    t = t.view(bst.BF16[info["dtype"]]) if info["dtype"] != "F32" else t
                    names.pop(name).copy_(t.reshape(info["shape"]))
    emb = m.emb
    m.logits = lambda h: torch.nn.functional.linear(h, emb.weight.to(h.dtype))
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=32.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--base-dtype", choices=("float32", "bfloat16"), default="float32")
    ap.add_argument("--compute", choices=("fp32", "autocast"), default="fp32")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    m = bf16_model(args.dir) if args.base_dtype == "bfloat16" else bst.load_model(args.dir)
    if args.rank > 0:
        for p in m.parameters():
            p.requires_grad_(False)
        # the recomputed layers (torch.utils.checkpoint) need an input that requires grad, as
        # transformers' enable_input_require_grads does for PEFT models (float32 activations)
        m.emb.register_forward_hook(lambda _m, _i, out: out.float().requires_grad_(True))
        for layer in m.layers:
            for name in TARGETS:
                setattr(layer, name, LoraLinear(getattr(layer, name), args.rank, args.alpha))
    params = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    steps = json.load(open(args.data))["steps"]
    if args.compute == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            res = bst.sft_steps(m, opt, steps)
    else:
        res = bst.sft_steps(m, opt, steps)
    res.update(trainable=sum(p.numel() for p in params), threads=args.threads,
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, torch=torch.__version__,
               base_dtype=args.base_dtype, compute=args.compute)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
