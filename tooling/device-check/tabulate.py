"""Joins check.mjs's `RL2 {json}` line and torch_check.py's `TORCH {json}` line into one markdown
table with ratios (the engine README's GPU table)."""
import json
import sys


def read(path, tag):
    for line in open(path):
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    return {}


rl2, torch = read(sys.argv[1], "RL2"), read(sys.argv[2], "TORCH")
print(f"rl2: {rl2.get('engine', 'did not run')}")
print(f"PyTorch {torch.get('torch', '?')} on {torch.get('device', 'did not run')}; shape {rl2.get('shape', '?')}\n")
n, seq = (256, 64) if rl2.get("shape") == "tiny" else (4096, 512)
rows = [
    (f"matmul {n}^3 f32, TFLOP/s", "matmulF32Tflops"),
    (f"matmul {n}^3 f16, TFLOP/s", "matmulF16Tflops"),
    (f"SFT tokens/s (batch 8 x {seq}, AdamW fp32)", "tokensPerS"),
    ("SFT peak GPU memory, GiB", "peakGpuBytes"),
    ("greedy decode tokens/s, batch 1", "decodeBatch1"),
    ("greedy decode tokens/s, batch 8", "decodeBatch8"),
    ("greedy decode tokens/s, batch 64", "decodeBatch64"),
]
print("| measure | rl2 (webgpu) | PyTorch | rl2 / PyTorch |")
print("| --- | ---: | ---: | ---: |")
for name, key in rows:
    a, b = rl2.get(key), torch.get(key)
    scale = 2**30 if key == "peakGpuBytes" else 1
    fmt = lambda x: "n/a" if x is None else f"{x / scale:.3g}"
    ratio = f"{a / b:.2f}x" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "-"
    print(f"| {name} | {fmt(a)} | {fmt(b)} | {ratio} |")
reads = rl2.get("decodeBatch64Reads")
if reads:
    print(f"\nrl2 decode at batch 64 reads back {reads['readsPerForward']:.3g} tensors per forward, "
          f"{reads['readBytesPerRow']:.3g} bytes a row (the sampled id and its logprob, no logits)")
