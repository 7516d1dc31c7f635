#!/usr/bin/env python3
"""Reference values for @rl2/algos, computed independently with torch (float64).

Run from packages/algos:  /usr/bin/python3 scripts/make_fixtures.py
(needs python3-torch 1.13 and numpy). Writes fixtures/*.json, which the vitest suites read;
the tests themselves never need python.

Every quantity here is computed on plain per-sequence lists (no packing), with torch
autograd for gradients. Inputs are drawn as float32 and then promoted to float64, so the
TypeScript side (float32 tensors) sees exactly the same inputs. Each fixture also carries
two layouts of the same sequences (one padded row per sequence, and several sequences
packed per row with sequenceIds) so the tests check that layout does not change the answer.
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
EPS32 = float(torch.finfo(torch.float32).eps)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
rng = np.random.default_rng(20261129)


def f32(x):
    """Round to float32 and return float64 numpy (so both sides see identical inputs)."""
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def tolist(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().numpy()
    return np.asarray(x).tolist()


def write(name, data):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(data, f, separators=(",", ":"))
    print("wrote", name)


# ---------------------------------------------------------------- layouts

def layouts(lengths, rows_of):
    """Two layouts of sequences with the given lengths.

    padded: one row per sequence, T = max length, sequenceIds omitted (row = sequence).
    packed: sequences assigned to rows by rows_of[i] (concatenated in order), sequenceIds
    per token, -1 on padding. Returns index maps (row, col) per sequence token.
    """
    t_pad = max(lengths) if lengths else 1
    padded = [[(i, j) for j in range(n)] for i, n in enumerate(lengths)]
    n_rows = max(rows_of) + 1 if rows_of else 1
    fill = [0] * n_rows
    packed = []
    for i, n in enumerate(lengths):
        r = rows_of[i]
        packed.append([(r, fill[r] + j) for j in range(n)])
        fill[r] += n
    t_pack = max(max(fill), 1) + 1  # one padding column at least
    ids = [[-1] * t_pack for _ in range(n_rows)]
    for i, pos in enumerate(packed):
        for r, c in pos:
            ids[r][c] = i
    return {
        "padded": {"rows": len(lengths), "cols": t_pad, "pos": padded},
        "packed": {"rows": n_rows, "cols": t_pack, "pos": packed, "sequenceIds": ids},
    }


def scatter(layout, per_seq, fill=0.0):
    """Lays per-sequence token lists out as a [B, T] nested list."""
    out = [[fill] * layout["cols"] for _ in range(layout["rows"])]
    for i, pos in enumerate(layout["pos"]):
        for j, (r, c) in enumerate(pos):
            out[r][c] = float(per_seq[i][j])
    return out


def laid_out(lay, fields):
    """Both layouts of every per-sequence field."""
    res = {}
    for name, lay_i in lay.items():
        d = {k: scatter(lay_i, v) for k, v in fields.items()}
        if name == "packed":
            d["sequenceIds"] = lay_i["sequenceIds"]
        res[name] = d
    return res


def random_sequences(lengths, p_action=0.8, first_prompt=True):
    masks = []
    for n in lengths:
        m = (rng.random(n) < p_action).astype(np.float64)
        if first_prompt and n > 2:
            m[0] = 0.0
        masks.append(m)
    return masks


# ---------------------------------------------------------------- aggregation

def aggregate(vals, masks, mode, totals, norm_length):
    """vals/masks: lists of per-sequence torch tensors."""
    n_tok, n_seq = totals
    if mode == "token-mean":
        s = sum((v * m).sum() for v, m in zip(vals, masks))
        return s / max(n_tok, 1)
    per = []
    for v, m in zip(vals, masks):
        s = (v * m).sum()
        if mode == "seq-mean-token-mean":
            s = s / max(float(m.sum()), 1.0)
        per.append(s)
    total = sum(per) if per else torch.tensor(0.0)
    denom = max(n_seq, 1)
    if mode == "seq-mean-token-sum-norm":
        denom *= norm_length
    return total / denom


def local_totals(masks):
    return (int(sum(float(m.sum()) for m in masks)), int(sum(1 for m in masks if m.sum() > 0)))


MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


def make_aggregation():
    lengths = [5, 1, 7, 3, 4]
    rows_of = [0, 0, 1, 1, 1]
    masks = random_sequences(lengths)
    masks[3][:] = 0.0  # a sequence without action tokens
    vals = [f32(rng.normal(size=n)) for n in lengths]
    lay = layouts(lengths, rows_of)
    cases = []
    for mode in MODES:
        for totals in [None, (40, 9)]:
            t = totals or local_totals([torch.tensor(m) for m in masks])
            out = aggregate([torch.tensor(v) for v in vals], [torch.tensor(m) for m in masks], mode, t, 11)
            cases.append({"mode": mode, "totals": totals and {"actionTokens": totals[0], "sequences": totals[1]},
                          "normLength": 11, "expected": float(out)})
    write("aggregation.json", {
        "lengths": lengths, "localTotals": dict(zip(["actionTokens", "sequences"], local_totals([torch.tensor(m) for m in masks]))),
        "layouts": laid_out(lay, {"values": vals, "actionMask": masks}), "cases": cases,
    })


# ---------------------------------------------------------------- KL

def kl(logp, ref, est):
    lr = logp - ref
    if est == "k1":
        return lr
    if est == "k2":
        return lr ** 2 / 2
    return torch.exp(-lr) - 1 + lr


def make_kl():
    shape = (3, 6)
    logp = f32(-np.abs(rng.normal(size=shape)) * 2)
    ref = f32(-np.abs(rng.normal(size=shape)) * 2)
    mask = (rng.random(shape) < 0.7).astype(np.float64)
    rewards = f32(rng.normal(size=shape))
    adv = f32(rng.normal(size=shape))
    coef = 0.05
    out = {"logps": tolist(logp), "refLogps": tolist(ref), "actionMask": tolist(mask), "rewards": tolist(rewards),
           "advantages": tolist(adv), "coef": coef, "estimators": {}}
    for est in ["k1", "k2", "k3"]:
        lp = torch.tensor(logp, requires_grad=True)
        k = kl(lp, torch.tensor(ref), est)
        (g,) = torch.autograd.grad((k * torch.tensor(mask)).sum(), lp)
        k = k.detach()
        out["estimators"][est] = {
            "kl": tolist(k),
            "gradMaskedSum": tolist(g),
            "rewards": tolist(torch.tensor(rewards) - coef * k * torch.tensor(mask)),
            "advantages": tolist(torch.tensor(adv) - coef * k * torch.tensor(mask)),
            "lossTerm": tolist(coef * k),
        }
    write("kl.json", out)


# ---------------------------------------------------------------- advantages

def make_trajectory_batch(seq_lengths, traj_of_seq, p_action=0.75):
    """Rows = sequences (RL2's unpacked rollout tensors), several rows per trajectory."""
    t = max(seq_lengths)
    b = len(seq_lengths)
    mask = np.zeros((b, t))
    rewards = np.zeros((b, t))
    values = f32(rng.normal(size=(b, t)))
    for r, n in enumerate(seq_lengths):
        m = (rng.random(n) < p_action).astype(np.float64)
        m[0] = 0.0
        m[n - 1] = 1.0  # a turn ends with a generated token
        mask[r, :n] = m
        # reward on the last generated token of the turn, a few small per-token rewards too
        rewards[r, n - 1] = float(rng.integers(0, 3))
        rewards[r, :n] += f32(rng.normal(size=n) * 0.1) * m * (rng.random(n) < 0.3)
    rewards = f32(rewards)
    return {"rewards": rewards, "values": values, "actionMask": mask,
            "trajectoryIds": list(traj_of_seq)}


def timelines(batch):
    """Action-only timeline per trajectory: list of flat indices (row-major)."""
    mask = batch["actionMask"]
    b, t = mask.shape
    n = max(batch["trajectoryIds"]) + 1
    out = [[] for _ in range(n)]
    for r in range(b):
        for c in range(t):
            if mask[r, c] > 0:
                out[batch["trajectoryIds"][r]].append(r * t + c)
    return out


def whiten(flat_values, idx):
    x = torch.tensor([flat_values[i] for i in idx])
    mean = x.mean()
    std = x.std() if len(idx) > 1 else torch.tensor(0.0)
    out = np.zeros_like(flat_values)
    for k, i in enumerate(idx):
        out[i] = float((x[k] - mean) / (std + EPS32))
    return out


def gae(batch, gamma, lam, do_whiten=True):
    tl = timelines(batch)
    r = batch["rewards"].reshape(-1)
    v = batch["values"].reshape(-1)
    adv = np.zeros_like(r)
    ret = np.zeros_like(r)
    # padded action-only tensors, RL2-style reverse scan
    n, lmax = len(tl), max(len(x) for x in tl)
    R = torch.zeros(n, lmax)
    V = torch.zeros(n, lmax)
    for k, idx in enumerate(tl):
        for j, i in enumerate(idx):
            R[k, j] = r[i]
            V[k, j] = v[i]
    nxt = F.pad(V[:, 1:], (0, 1), value=0.0)
    delta = R + gamma * nxt - V
    g = torch.zeros(n)
    gs = []
    for j in reversed(range(lmax)):
        g = delta[:, j] + gamma * lam * g
        gs.append(g)
    G = torch.stack(gs[::-1], -1)
    for k, idx in enumerate(tl):
        for j, i in enumerate(idx):
            adv[i] = float(G[k, j])
            ret[i] = float(G[k, j] + V[k, j])
    if do_whiten:
        adv = whiten(adv, [i for idx in tl for i in idx])
    shape = batch["rewards"].shape
    return adv.reshape(shape), ret.reshape(shape)


def traj_totals(batch):
    r = batch["rewards"].reshape(-1)
    return torch.tensor([sum(r[i] for i in idx) for idx in timelines(batch)])


def broadcast(batch, per_traj):
    out = np.zeros(batch["rewards"].size)
    for k, idx in enumerate(timelines(batch)):
        for i in idx:
            out[i] = float(per_traj[k])
    return out.reshape(batch["rewards"].shape)


def reinforce(batch, g, global_baseline, norm_var):
    R = traj_totals(batch)
    if g == 1 or global_baseline:
        groups = R.view(1, -1)
    else:
        groups = R.view(-1, g)
    mean = groups.mean(-1, keepdim=True)
    std = groups.std(-1, keepdim=True) if groups.shape[1] > 1 else torch.zeros_like(mean)
    a = groups - mean
    if norm_var:
        a = a / (std + EPS32)
    return broadcast(batch, a.reshape(-1))


def rloo(batch, g):
    R = traj_totals(batch)
    g = len(R) if g == 1 else g
    groups = R.view(-1, g)
    if g == 1:
        return broadcast(batch, R)
    loo = (groups.sum(-1, keepdim=True) - groups) / (g - 1)
    return broadcast(batch, (groups - loo).reshape(-1))


def reinforce_pp(batch, gamma, baseline, g, do_whiten=True):
    tl = timelines(batch)
    r = batch["rewards"].reshape(-1)
    R = traj_totals(batch)
    b = torch.zeros(len(R))
    if baseline:
        gg = len(R) if g == 1 else g
        b = R.view(-1, gg).mean(-1, keepdim=True).expand(-1, gg).reshape(-1)
    adv = np.zeros_like(r)
    for k, idx in enumerate(tl):
        rs = torch.tensor([r[i] for i in idx])
        disc = torch.tensor([gamma ** j for j in range(len(idx))])
        for j, i in enumerate(idx):
            adv[i] = float((rs[j:] * disc[: len(idx) - j]).sum() - b[k])
    if do_whiten:
        adv = whiten(adv, [i for idx in tl for i in idx])
    return adv.reshape(batch["rewards"].shape)


def enc_batch(batch):
    return {"rewards": tolist(batch["rewards"]), "values": tolist(batch["values"]),
            "actionMask": tolist(batch["actionMask"]), "trajectoryIds": batch["trajectoryIds"]}


def make_advantages():
    # 4 prompts x 2 responses; trajectories 0,2,5 have two turns (two rows), 6 has three.
    traj_of_seq = [0, 0, 1, 2, 2, 3, 4, 5, 5, 6, 6, 6, 7]
    lengths = [int(x) for x in rng.integers(2, 9, size=len(traj_of_seq))]
    batch = make_trajectory_batch(lengths, traj_of_seq)
    # make group 1 (trajectories 2, 3) have equal total rewards
    tot = traj_totals(batch)
    r3 = [i for i in range(len(traj_of_seq)) if traj_of_seq[i] == 3][0]
    last = int(np.nonzero(batch["actionMask"][r3])[0][-1])
    batch["rewards"][r3, last] += float(tot[2] - tot[3])
    batch["rewards"] = f32(batch["rewards"])
    cases = {"gae": [], "reinforce": [], "rloo": [], "reinforcePlusPlus": []}
    for gamma, lam, wh in [(1.0, 1.0, True), (0.99, 0.95, True), (0.9, 0.5, False)]:
        a, ret = gae(batch, gamma, lam, wh)
        cases["gae"].append({"gamma": gamma, "lambda": lam, "whiten": wh, "advantages": tolist(a), "returns": tolist(ret)})
    for g, glob, nv in [(2, False, False), (2, False, True), (2, True, True), (1, False, True), (4, False, True), (8, False, False)]:
        cases["reinforce"].append({"responsesPerPrompt": g, "globalBaseline": glob, "normVar": nv,
                                   "advantages": tolist(reinforce(batch, g, glob, nv))})
    for g in [1, 2, 4]:
        cases["rloo"].append({"responsesPerPrompt": g, "advantages": tolist(rloo(batch, g))})
    for gamma, base, g, wh in [(1.0, False, 1, True), (0.95, False, 1, True), (1.0, True, 2, True), (0.9, True, 4, False)]:
        cases["reinforcePlusPlus"].append({"gamma": gamma, "baseline": "group-mean" if base else "none",
                                           "responsesPerPrompt": g, "whiten": wh,
                                           "advantages": tolist(reinforce_pp(batch, gamma, base, g, wh))})
    write("advantages.json", {"batch": enc_batch(batch), "cases": cases})


# ---------------------------------------------------------------- actor / critic

def actor_loss(seqs, opt, totals, mode, norm_length):
    """seqs: list of dicts of per-token float64 arrays. Returns loss, metrics, grad per sequence."""
    lps = [torch.tensor(s["logps"], requires_grad=True) for s in seqs]
    masks = [torch.tensor(s["actionMask"]) for s in seqs]
    agg = lambda xs: aggregate(xs, masks, mode, totals, norm_length)
    lo, hi = opt.get("clipLow", opt.get("clip", 0.2)), opt.get("clipHigh", opt.get("clip", 0.2))
    losses, clipped, dual, pg, akl, ekl, kls, ents = [], [], [], [], [], [], [], []
    for s, lp, m in zip(seqs, lps, masks):
        old = torch.tensor(s["oldLogps"]) if opt.get("useOld", True) else lp.detach()
        adv = torch.tensor(s["advantages"])
        lr = lp - old
        if opt.get("ratioLevel") == "sequence":
            seq_mean = ((lr.detach() * m).sum() / max(float(m.sum()), 1.0))
            lr = seq_mean + lp - lp.detach()
        ratio = torch.exp(lr)
        obj = adv * ratio
        cobj = adv * torch.clamp(ratio, 1 - lo, 1 + hi)
        loss = -torch.min(obj, cobj)
        clipped.append((obj > cobj).double())
        if "dualClip" in opt:
            cap = -adv * opt["dualClip"]
            dual.append(((adv < 0) & (loss > cap)).double())
            loss = torch.where(adv < 0, torch.min(loss, cap), loss)
        pg.append(loss.detach())
        akl.append(kl(old, lp.detach(), "k3"))
        if "engineLogps" in s:
            ekl.append(kl(torch.tensor(s["engineLogps"]), old.detach(), "k3"))
        if opt.get("klCoef", 0) > 0:
            k = kl(lp, torch.tensor(s["refLogps"]), opt.get("klEstimator", "k2"))
            kls.append(k.detach())
            loss = loss + opt["klCoef"] * k
        if opt.get("tisCoef", 0) > 0:
            loss = loss * torch.exp(lp.detach() - torch.tensor(s["engineLogps"])).clamp(max=opt["tisCoef"])
        if "entropy" in s:
            e = torch.tensor(s["entropy"])
            ents.append(e)
            loss = loss - opt.get("entropyCoef", 0.0) * e
        losses.append(loss)
    total = agg(losses)
    grads = torch.autograd.grad(total, lps, allow_unused=True)
    metrics = {"clipFraction": agg(clipped), "pgLoss": agg(pg), "approxKl": agg(akl)}
    if dual:
        metrics["dualClipFraction"] = agg(dual)
    if ekl:
        metrics["engineApproxKl"] = agg(ekl)
    if kls:
        metrics["klLoss"] = agg(kls)
    if ents:
        metrics["entropy"] = agg(ents)
    grads = [g if g is not None else torch.zeros_like(lp) for g, lp in zip(grads, lps)]
    return float(total), {k: float(v) for k, v in metrics.items()}, [g.numpy() for g in grads]


def make_actor():
    lengths = [6, 1, 4, 8, 3, 5]
    rows_of = [0, 0, 0, 1, 1, 2]
    masks = random_sequences(lengths)
    masks[1][:] = 1.0  # single-token sequence
    seqs = []
    for n, m in zip(lengths, masks):
        lp = f32(-np.abs(rng.normal(size=n)) * 1.5)
        seqs.append({
            "logps": lp,
            "oldLogps": f32(lp + rng.normal(size=n) * 0.3),
            "engineLogps": f32(lp + rng.normal(size=n) * 0.2),
            "refLogps": f32(lp + rng.normal(size=n) * 0.4),
            "entropy": f32(np.abs(rng.normal(size=n))),
            "advantages": f32(rng.normal(size=n) * 1.5),
            "actionMask": m,
        })
    # GSPO needs a sequence ratio close to 1 to exercise both clipped and unclipped sequences
    gspo_seqs = [dict(s, oldLogps=f32(s["logps"] + rng.normal(size=len(s["logps"])) * 0.002)) for s in seqs]
    lay = layouts(lengths, rows_of)
    tm = local_totals([torch.tensor(m) for m in masks])
    configs = [
        ("ppo", {}, "token-mean", None),
        ("ppo-no-old", {"useOld": False}, "token-mean", None),
        ("ppo-seq-mean", {"clip": 0.1}, "seq-mean-token-mean", None),
        ("dapo-clip-higher", {"clipLow": 0.2, "clipHigh": 0.28}, "token-mean", (60, 10)),
        ("dual-clip", {"clip": 0.2, "dualClip": 1.1}, "seq-mean-token-sum", None),
        ("kl-k2-entropy", {"klCoef": 0.1, "klEstimator": "k2", "entropyCoef": 0.01}, "token-mean", None),
        ("kl-k3-tis", {"klCoef": 0.05, "klEstimator": "k3", "tisCoef": 1.2}, "seq-mean-token-sum-norm", None),
        ("gspo", {"ratioLevel": "sequence", "clipLow": 0.0003, "clipHigh": 0.0004}, "seq-mean-token-mean", None),
    ]
    cases = []
    for name, opt, mode, totals in configs:
        data = gspo_seqs if name == "gspo" else seqs
        loss, metrics, grads = actor_loss(data, opt, totals or tm, mode, 16)
        cases.append({"name": name, "options": opt, "mode": mode,
                      "totals": totals and {"actionTokens": totals[0], "sequences": totals[1]}, "normLength": 16,
                      "loss": loss, "metrics": metrics,
                      "inputs": laid_out(lay, {k: [s[k] for s in data] for k in data[0]}),
                      "grad": laid_out(lay, {"logps": grads})})
    write("actor.json", {"cases": cases})


def make_critic():
    lengths = [5, 2, 7]
    rows_of = [0, 0, 1]
    masks = random_sequences(lengths)
    seqs = []
    for n, m in zip(lengths, masks):
        old = f32(rng.normal(size=n))
        seqs.append({"values": f32(old + rng.normal(size=n) * 0.6), "oldValues": old,
                     "returns": f32(rng.normal(size=n)), "actionMask": m})
    lay = layouts(lengths, rows_of)
    mask_t = [torch.tensor(s["actionMask"]) for s in seqs]
    cases = []
    for clip, mode in [(0.5, "token-mean"), (0.2, "seq-mean-token-mean")]:
        vs = [torch.tensor(s["values"], requires_grad=True) for s in seqs]
        losses, cf, ve = [], [], []
        for s, v in zip(seqs, vs):
            old, ret = torch.tensor(s["oldValues"]), torch.tensor(s["returns"])
            vc = torch.clamp(v, old - clip, old + clip)
            mse, cmse = (v - ret) ** 2, (vc - ret) ** 2
            losses.append(torch.max(mse, cmse))
            cf.append((mse < cmse).double())
            ve.append(mse.detach())
        t = local_totals(mask_t)
        loss = aggregate(losses, mask_t, mode, t, 1)
        grads = torch.autograd.grad(loss, vs)
        cases.append({"clip": clip, "mode": mode, "loss": float(loss),
                      "metrics": {"clipFraction": float(aggregate(cf, mask_t, mode, t, 1)),
                                  "valueError": float(aggregate(ve, mask_t, mode, t, 1))},
                      "grad": laid_out(lay, {"values": [g.numpy() for g in grads]})})
    write("critic.json", {"inputs": laid_out(lay, {k: [s[k] for s in seqs] for k in seqs[0]}), "cases": cases})


def make_sft():
    lengths = [4, 1, 6, 3]
    rows_of = [0, 0, 1, 1]
    masks = random_sequences(lengths)
    logps = [f32(-np.abs(rng.normal(size=n))) for n in lengths]
    lay = layouts(lengths, rows_of)
    mask_t = [torch.tensor(m) for m in masks]
    cases = []
    for mode in ["token-mean", "seq-mean-token-mean"]:
        lps = [torch.tensor(x, requires_grad=True) for x in logps]
        loss = aggregate([-x for x in lps], mask_t, mode, local_totals(mask_t), 1)
        grads = torch.autograd.grad(loss, lps)
        cases.append({"mode": mode, "loss": float(loss), "grad": laid_out(lay, {"logps": [g.numpy() for g in grads]})})
    write("sft.json", {"inputs": laid_out(lay, {"logps": logps, "actionMask": masks}), "cases": cases})


# ---------------------------------------------------------------- preference losses

def make_preference():
    p = 5
    chosen = f32(rng.normal(size=p) * 2)
    rejected = f32(rng.normal(size=p) * 2)
    rejected[2] = chosen[2]  # a tie: margin 0 is not counted as correct
    c, r = torch.tensor(chosen, requires_grad=True), torch.tensor(rejected, requires_grad=True)
    total_pairs = 8
    margin = c - r
    loss = (-F.logsigmoid(margin)).sum() / total_pairs
    gc, gr = torch.autograd.grad(loss, [c, r])
    bt = {"chosen": tolist(chosen), "rejected": tolist(rejected), "totalPairs": total_pairs, "loss": float(loss),
          "metrics": {"accuracy": float((margin > 0).double().sum() / total_pairs),
                      "margin": float(margin.sum() / total_pairs), "chosen": float(c.sum() / total_pairs),
                      "rejected": float(r.sum() / total_pairs)},
          "gradChosen": tolist(gc), "gradRejected": tolist(gr)}

    lens_c = rng.integers(1, 20, size=p).astype(np.float64)
    lens_r = rng.integers(1, 20, size=p).astype(np.float64)
    inputs = {
        "chosenLogps": f32(-lens_c * np.abs(rng.normal(size=p) + 1)),
        "rejectedLogps": f32(-lens_r * np.abs(rng.normal(size=p) + 1)),
        "chosenLengths": lens_c, "rejectedLengths": lens_r,
    }
    inputs["refChosenLogps"] = f32(inputs["chosenLogps"] + rng.normal(size=p))
    inputs["refRejectedLogps"] = f32(inputs["rejectedLogps"] + rng.normal(size=p))
    cases = []
    for name, opt in [("dpo", {}), ("dpo-beta", {"beta": 0.5}), ("cdpo", {"labelSmoothing": 0.1}),
                      ("ipo", {"variant": "ipo", "beta": 0.2}),
                      ("simpo", {"variant": "simpo", "beta": 2.0, "simpoGamma": 1.0}),
                      ("dpo-nll", {"nllCoef": 0.5, "totalPairs": 7})]:
        beta = opt.get("beta", 0.1)
        eps = opt.get("labelSmoothing", 0.0)
        d = opt.get("totalPairs", p)
        cl = torch.tensor(inputs["chosenLogps"], requires_grad=True)
        rl = torch.tensor(inputs["rejectedLogps"], requires_grad=True)
        lc, lr_ = torch.tensor(lens_c), torch.tensor(lens_r)
        variant = opt.get("variant", "dpo")
        if variant == "simpo":
            rc, rr = beta * cl / lc, beta * rl / lr_
        else:
            rc = beta * (cl - torch.tensor(inputs["refChosenLogps"]))
            rr = beta * (rl - torch.tensor(inputs["refRejectedLogps"]))
        h = rc - rr
        if variant == "ipo":
            losses = (h / beta - 1 / (2 * beta)) ** 2
        else:
            z = h - opt.get("simpoGamma", 0.5 * beta) if variant == "simpo" else h
            losses = -(1 - eps) * F.logsigmoid(z) - eps * F.logsigmoid(-z)
        metrics = {"rewardsChosen": rc.sum() / d, "rewardsRejected": rr.sum() / d, "rewardsMargin": h.sum() / d,
                   "accuracy": (h > 0).double().sum() / d}
        if opt.get("nllCoef", 0) > 0:
            nll = -cl / lc
            metrics["nllLoss"] = nll.sum() / d
            losses = losses + opt["nllCoef"] * nll
        loss = losses.sum() / d
        gc, gr = torch.autograd.grad(loss, [cl, rl])
        cases.append({"name": name, "options": opt, "loss": float(loss),
                      "metrics": {k: float(v) for k, v in metrics.items()},
                      "gradChosen": tolist(gc), "gradRejected": tolist(gr)})
    write("preference.json", {"bradleyTerry": bt, "dpo": {"inputs": {k: tolist(v) for k, v in inputs.items()},
                                                          "cases": cases}})


def make_adaptive_kl():
    steps = []
    coef = 0.2
    for kl_obs, n in [(3.0, 256), (12.0, 512), (6.5, 128), (0.0, 64)]:
        e = min(max(kl_obs / 6.0 - 1, -0.2), 0.2)
        new = coef * (1 + e * n / 10000)
        steps.append({"coef": coef, "observedKl": kl_obs, "nSteps": n, "next": new})
        coef = new
    write("adaptive-kl.json", {"target": 6.0, "horizon": 10000, "steps": steps})


if __name__ == "__main__":
    make_aggregation()
    make_kl()
    make_advantages()
    make_actor()
    make_critic()
    make_sft()
    make_preference()
    make_adaptive_kl()
