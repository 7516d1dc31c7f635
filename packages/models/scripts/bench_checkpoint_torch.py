#!/usr/bin/env python3
"""PyTorch 1.13 side of `pnpm bench checkpoint-io`: the same Qwen3-0.6B-shaped weights saved and
loaded the PyTorch way (torch.save / torch.load of a state dict). Prints one JSON line
{seconds, peak_rss} per phase. Usage: bench_checkpoint_torch.py PHASE DIR
  convert         reads DIR/fp32/model.safetensors (not measured) and writes DIR/torch-fp32.pt
  load            torch.load(DIR/torch-fp32.pt)
  load-save       torch.load, then torch.save to DIR/torch-resaved.pt
  load-save-bf16  torch.load, .bfloat16() per tensor, torch.save to DIR/torch-bf16.pt
  load-bf16       torch.load(DIR/torch-bf16.pt), .float() per tensor
"""
import json
import os
import resource
import struct
import sys
import time

import torch


def read_safetensors_f32(path):
    """Tensor by tensor into preallocated tensors (no whole-file buffer)."""
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            t = torch.empty(info["shape"], dtype=torch.float32)
            f.seek(8 + n + begin)
            f.readinto(t.numpy().reshape(-1).view("uint8"))
            out[name] = t
    return out


def main():
    phase, folder = sys.argv[1], sys.argv[2]
    pt = lambda name: os.path.join(folder, name)
    t0 = time.time()
    if phase == "convert":
        torch.save(read_safetensors_f32(os.path.join(folder, "fp32", "model.safetensors")), pt("torch-fp32.pt"))
    elif phase == "load":
        torch.load(pt("torch-fp32.pt"))
    elif phase == "load-save":
        torch.save(torch.load(pt("torch-fp32.pt")), pt("torch-resaved.pt"))
    elif phase == "load-save-bf16":
        sd = torch.load(pt("torch-fp32.pt"))
        torch.save({k: v.bfloat16() for k, v in sd.items()}, pt("torch-bf16.pt"))
    elif phase == "load-bf16":
        sd = torch.load(pt("torch-bf16.pt"))
        sd = {k: v.float() for k, v in sd.items()}
    else:
        raise SystemExit(f"unknown phase {phase}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": time.time() - t0, "peak_rss": peak}))


if __name__ == "__main__":
    main()
