"""Reference values for AdamW, the cosine schedule and global-norm clipping from torch 1.13.

Run: /usr/bin/python3 packages/trainers/scripts/make_optim_fixtures.py
Writes packages/trainers/fixtures/optim.json (tests never need python or torch).
"""
import json
import math
import os

import torch

torch.manual_seed(0)
shapes = {"w": (3, 4), "b": (4,), "emb": (5, 2)}
init = {k: torch.randn(*s, dtype=torch.float64) for k, s in shapes.items()}
total_steps, lr, min_lr, warmup_ratio = 10, 1e-2, 1e-3, 0.2
betas, eps, wd, max_norm = (0.9, 0.95), 1e-8, 0.1, 1.0
warmup = int(warmup_ratio * total_steps)


def factor(step):
    # transformers get_cosine_schedule_with_warmup, floored at min_lr (written independently of the TS code)
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total_steps - warmup)
    cos = 0.5 * (1.0 + math.cos(math.pi * progress))
    return (min_lr + (lr - min_lr) * cos) / lr


params = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
opt = torch.optim.AdamW(list(params.values()), lr=lr, betas=betas, eps=eps, weight_decay=wd)
sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
steps = []
for step in range(total_steps):
    # gradients of different sizes so that clipping is active on some steps only
    grads = {k: torch.randn(*s, dtype=torch.float64) * (0.05 if step % 2 else 1.0) for k, s in shapes.items()}
    for k, p in params.items():
        p.grad = grads[k].clone()
    used_lr = opt.param_groups[0]["lr"]
    norm = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)
    opt.step()
    sched.step()
    steps.append({
        "lr": used_lr,
        "grad_norm": float(norm),
        "grads": {k: g.flatten().tolist() for k, g in grads.items()},
        "params": {k: p.detach().flatten().tolist() for k, p in params.items()},
    })

out = {
    "torch": torch.__version__,
    "config": {"total_steps": total_steps, "lr": lr, "min_lr": min_lr, "warmup_ratio": warmup_ratio,
               "betas": betas, "eps": eps, "weight_decay": wd, "max_norm": max_norm},
    "shapes": {k: list(s) for k, s in shapes.items()},
    "init": {k: v.flatten().tolist() for k, v in init.items()},
    "steps": steps,
}
path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "optim.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", os.path.normpath(path))
