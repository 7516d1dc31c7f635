#!/usr/bin/env python3
"""PyTorch 1.13 side of `pnpm bench lora`: the SFT steps of bench_scale_torch.py (the same
hand-written Qwen3, recomputed layers, packed rows, AdamW, clipping at 1.0), as full fine-tuning
or with LoRA adapters written out by hand (PEFT's math: y = W x + s B A x, A kaiming-uniform
a=sqrt(5), B zeros, s = alpha / r) on the projections, the base frozen.

    /usr/bin/python3 packages/trainers/scripts/bench_lora_torch.py MODEL_DIR --data steps.json [--rank R --alpha A]

Prints one JSON line: tokens_per_s, step_s, loss, peak_rss_mib, trainable parameters.
"""
import argparse
import json
import math
import os
import resource
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=32.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    m = bst.load_model(args.dir)
    if args.rank > 0:
        for p in m.parameters():
            p.requires_grad_(False)
        # the recomputed layers (torch.utils.checkpoint) need an input that requires grad, as
        # transformers' enable_input_require_grads does for PEFT models
        m.emb.register_forward_hook(lambda _m, _i, out: out.requires_grad_(True))
        for layer in m.layers:
            for name in TARGETS:
                setattr(layer, name, LoraLinear(getattr(layer, name), args.rank, args.alpha))
    params = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    res = bst.sft_steps(m, opt, json.load(open(args.data))["steps"])
    res.update(trainable=sum(p.numel() for p in params), threads=args.threads,
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, torch=torch.__version__)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
