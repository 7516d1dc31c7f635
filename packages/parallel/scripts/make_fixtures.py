#!/usr/bin/python3
"""Reference values for @rl2/parallel's layout tests, computed single-process with torch 1.13.

Run: /usr/bin/python3 packages/parallel/scripts/make_fixtures.py  (writes packages/parallel/fixtures/*.json)
Everything here is the plain, unsharded computation; the TypeScript tests shard it over real
processes and must reproduce these numbers.
"""
import json
import math
import os

import numpy as np
import torch

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)  # references in float64; the TS side runs float32
OUT = os.path.join(os.path.dirname(__file__), '..', 'fixtures')
os.makedirs(OUT, exist_ok=True)


def t(shape, scale=1.0):
    return (torch.randn(*shape) * scale).requires_grad_(True)


def dump(name, obj):
    def conv(v):
        if isinstance(v, torch.Tensor):
            return {'shape': list(v.shape), 'data': [float(x) for x in v.detach().reshape(-1).tolist()]}
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return v
    with open(os.path.join(OUT, name), 'w') as f:
        json.dump(conv(obj), f)


# --- tensor-parallel MLP: y = tanh(x W1^T + b1) W2^T + b2; loss = sum(y * c) ---
x, w1, b1, w2, b2 = t([4, 6]), t([8, 6], 0.5), t([8], 0.1), t([6, 8], 0.5), t([6], 0.1)
c = torch.randn(4, 6)
h = torch.tanh(x @ w1.T + b1)
y = h @ w2.T + b2
loss = (y * c).sum()
loss.backward()
dump('tp_mlp.json', {'x': x, 'w1': w1, 'b1': b1, 'w2': w2, 'b2': b2, 'c': c, 'y': y, 'loss': float(loss),
                     'dx': x.grad, 'dw1': w1.grad, 'db1': b1.grad, 'dw2': w2.grad, 'db2': b2.grad})

# --- vocab-parallel logprobs and entropy; loss = sum(a * logp + b * entropy) ---
V = 12
logits = t([5, V], 2.0)
targets = torch.tensor([0, 5, 6, 11, 3])
a, b = torch.randn(5), torch.randn(5)
logz = torch.logsumexp(logits, -1)
logp = logits.gather(-1, targets[:, None])[:, 0] - logz
p = torch.softmax(logits, -1)
entropy = logz - (p * logits).sum(-1)
loss = (a * logp + b * entropy).sum()
loss.backward()
dump('vocab_logprobs.json', {'logits': logits, 'targets': targets.tolist(), 'a': a, 'b': b, 'logprobs': logp,
                             'entropy': entropy, 'dlogits': logits.grad})

# --- vocab-parallel embedding; loss = sum(E[ids] * g) ---
table = t([V, 4])
ids = torch.tensor([0, 11, 5, 6, 6, 2, 9])
g = torch.randn(7, 4)
emb = table[ids]
(emb * g).sum().backward()
dump('vocab_embedding.json', {'table': table, 'ids': ids.tolist(), 'g': g, 'out': emb, 'dtable': table.grad})

# --- causal attention over a packed row (varlen), GQA; loss = sum(out * g) ---
cu = [0, 8, 12, 20]
T, Hq, Hkv, D = 20, 4, 2, 3
q, k, v = t([T, Hq, D]), t([T, Hkv, D]), t([T, Hkv, D])
g = torch.randn(T, Hq, D)
seg = torch.zeros(T, dtype=torch.long)
for i in range(len(cu) - 1):
    seg[cu[i]:cu[i + 1]] = i
pos = torch.arange(T)
mask = (seg[:, None] == seg[None, :]) & (pos[None, :] <= pos[:, None])
rep = Hq // Hkv
kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
scores = torch.einsum('qhd,khd->hqk', q, kk) / math.sqrt(D)
scores = scores.masked_fill(~mask[None], float('-inf'))
out = torch.einsum('hqk,khd->qhd', torch.softmax(scores, -1), vv)
(out * g).sum().backward()


def zigzag(cu, cp):
    """Indices each cp rank keeps: every sequence in 2*cp chunks, rank r keeps r and 2cp-1-r."""
    ranks = [[] for _ in range(cp)]
    for s in range(len(cu) - 1):
        n = (cu[s + 1] - cu[s]) // (2 * cp)
        for r in range(cp):
            for c in (r, 2 * cp - 1 - r):
                ranks[r].extend(range(cu[s] + c * n, cu[s] + (c + 1) * n))
    return ranks


dump('cp_attention.json', {'cu_seqlens': cu, 'q': q, 'k': k, 'v': v, 'g': g, 'out': out, 'dq': q.grad, 'dk': k.grad,
                           'dv': v.grad, 'zigzag2': zigzag(cu, 2),
                           'zigzag2_np': np.concatenate([np.array(r) for r in zigzag(cu, 2)]).argsort().tolist()})

print('wrote', sorted(os.listdir(OUT)))
