"""What an iteration's update did, measured (issue 25): how far the policy moved, whether the
regression's quadratic acted, which tokens the gradient came from, and the Const anchor's c.

- ``update_stats``: after the update, π_{t+1}'s log-probs on the iteration's rollouts against
  π_t's: KL(π_{t+1} ‖ π_t) per policy-written token, Δ log π(y) per rollout kind, and for the
  regression |residual| / |r − V̂| at the start and the end, and β₂·|Δ log π(y)| / |r − V̂|
  (of order 0.1-1 when the quadratic acts as a trust region; ~0 when the optimizer's step
  alone sets the move).
- ``gradient_parts``: at θ = π_t, the norm of the gradient that comes from each part of the
  rollouts (semi-on-policy policy tokens, semi-on-policy intervention tokens, control
  rollouts; guided and on-policy ones for MENTOR), on the iteration's first micro-batch.
- ``stability_c``: the Const anchor's c from π_t's own log-prob of the corrections, placed so
  that an intervened rollout's extra advantage β₂·n_int·(c − log π_t) is ``const_bonus`` times
  the iteration's mean |r − V̂| (docs/design.md §1.2: keep it small next to |r − V̂|).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from mintrl.training.distributed import sum_floats, sum_tensor, world


def stability_c(df: pd.DataFrame, int_logprob_sum: float, int_tokens: float,
                advantages: torch.Tensor, beta2: float, bonus: float, device: str) -> float:
    """c = m + bonus·mean|A| / (β₂·n̄), capped at 0: m is π_t's mean log-prob per intervention
    token (summed over ranks), n̄ the mean intervention tokens of an intervened rollout,
    A = r − V̂ (N,) over the iteration's rollouts."""
    if world() > 1:
        int_logprob_sum, int_tokens = sum_floats([int_logprob_sum, int_tokens], device)
    n_int = df["provenance"].map(sum).to_numpy() if "provenance" in df else np.zeros(len(df))
    if int_tokens <= 0 or not (n_int > 0).any():
        raise ValueError("const anchor: no intervention tokens in the phase's first iteration "
                         "to measure c from; set rl.const_c")
    mean_logprob = int_logprob_sum / int_tokens
    per_rollout = float(n_int[n_int > 0].mean())
    return min(0.0, mean_logprob + bonus * float(advantages.abs().mean()) / (beta2 * per_rollout))


def _kinds(df: pd.DataFrame) -> np.ndarray:
    return df["kind"].to_numpy() if "kind" in df else np.array(["on-policy"] * len(df))


def update_stats(engine, micro, ref: dict, df: pd.DataFrame, spec, device: str,
                 forward, targets=None) -> dict[str, float]:
    """π_{t+1} against π_t on the iteration's rollouts (``micro``: its packed micro-batches,
    ``ref["old"]``: π_t's (b, T) log-probs per micro-batch; ``forward(model, mb)``: (b, T)
    log-probs). The KL is estimated on the tokens π_t wrote: with ρ = π_{t+1}/π_t of such a
    token, ρ·log ρ − ρ + 1 ≥ 0 has mean KL(π_{t+1} ‖ π_t) under π_t."""
    n = len(df)
    cols = torch.zeros(4, n, dtype=torch.float64)  # Δ total, Δ intervention, KL sum, tokens
    engine.module.eval()
    with torch.no_grad():
        for mb, old in zip(micro, ref["old"], strict=True):
            new = forward(engine.module, mb)
            resp = mb.response_mask.to(device)
            inter = mb.intervention.to(device) * resp
            own = resp - inter
            d = (new - old) * resp
            ratio = torch.exp(d)
            kl = (ratio * d - ratio + 1) * own
            rows = torch.as_tensor(mb.rows)
            cols[0, rows] = d.sum(-1).double().cpu()
            cols[1, rows] = (d * inter).sum(-1).double().cpu()
            cols[2, rows] = kl.sum(-1).double().cpu()
            cols[3, rows] = own.sum(-1).double().cpu()
    if world() > 1:  # each rank filled its own rows
        cols = sum_tensor(cols.to(ref["old"][0].device)).cpu()
    delta, delta_int, kl, tokens = cols
    out = {"update/kl_per_token": float(kl.sum() / tokens.sum().clamp(min=1)),
           "update/kl_per_rollout": float(kl.mean())}
    kinds = _kinds(df)
    for kind in sorted(set(kinds)):
        sel = torch.as_tensor(kinds == kind)
        out[f"update/delta_logprob_{kind}"] = float(delta[sel].mean())
    if "semi" in set(kinds):
        sel = torch.as_tensor(kinds == "semi")
        out["update/delta_logprob_semi_intervention"] = float(delta_int[sel].mean())
    if ref.get("anchor") and targets is not None and targets.values is not None:
        out |= _regression_stats(delta, micro, ref, targets, spec, n)
    return out


def _regression_stats(delta, micro, ref, targets, spec, n: int) -> dict[str, float]:
    """|residual| / |A| at the start and the end of the update, and β₂·|Δ log π| / |A|."""
    start = torch.zeros(n, dtype=torch.float64)
    for mb, old, anchor in zip(micro, ref["old"], ref["anchor"], strict=True):
        start[torch.as_tensor(mb.rows)] = (old.sum(-1) - anchor).double().cpu()
    if world() > 1:
        start = sum_tensor(start.to(ref["old"][0].device)).cpu()
    adv = (targets.rewards - targets.values).double()
    scale = float(adv.abs().mean())
    res0 = spec.beta2 * start - adv
    res1 = spec.beta2 * (start + delta) - adv
    if scale == 0:
        return {"regression/adv_abs": 0.0}
    return {"regression/adv_abs": scale,
            "regression/residual_ratio_start": float(res0.abs().mean()) / scale,
            "regression/residual_ratio_end": float(res1.abs().mean()) / scale,
            "regression/beta2_move_ratio": spec.beta2 * float(delta.abs().mean()) / scale}


def token_parts(df: pd.DataFrame, mb) -> dict[str, torch.Tensor]:
    """(b, T) masks of a micro-batch's parts: semi-on-policy policy / intervention tokens and
    each other rollout kind's response tokens."""
    kinds = _kinds(df)[mb.rows]
    resp, inter = mb.response_mask, mb.intervention * mb.response_mask
    parts = {}
    for kind in sorted(set(kinds)):
        row = torch.as_tensor(kinds == kind, dtype=resp.dtype)[:, None]
        if kind == "semi":
            parts["semi_policy"] = (resp - inter) * row
            parts["semi_intervention"] = inter * row
        else:
            parts[kind] = resp * row
    return parts


def gradient_parts(engine, micro, n_micro: int, loss_of, df: pd.DataFrame,
                   forward) -> dict[str, float]:
    """‖∇L‖ from each part of the rollouts at θ = π_t, on micro-batches ``0..n_micro-1``;
    ``loss_of(lp, j)``: the objective's loss of micro-batch j. The loss's
    gradient in θ is Σ_k (∂L/∂ log π_k) ∇ log π_k, split by the token k's part; the norms and
    each part's share of their sum are returned. One process without ZeRO only (it holds one
    gradient copy per part)."""
    if world() > 1 or engine.zero_optimization_stage() > 0:
        return {}
    params = [p for p in engine.module.parameters() if p.requires_grad]
    acc: dict[str, list[torch.Tensor]] = {}
    engine.module.eval()  # no dropout: the gradient of the iteration's own θ
    for j in range(n_micro):
        mb = micro[j]
        lp = forward(engine.module, mb)
        loss = loss_of(lp, j)
        (dlp,) = torch.autograd.grad(loss, lp, retain_graph=True)
        for name, mask in token_parts(df, mb).items():
            if not mask.any():
                continue
            grads = torch.autograd.grad((dlp.detach() * lp * mask.to(lp.device)).sum(), params,
                                        retain_graph=True, allow_unused=True)
            got = acc.setdefault(name, [torch.zeros_like(p) for p in params])
            for a, g in zip(got, grads, strict=True):
                if g is not None:
                    a += g
    norms = {k: float(torch.sqrt(sum((g.float() ** 2).sum() for g in v))) for k, v in acc.items()}
    total = sum(norms.values()) or 1.0
    return {**{f"grad/norm_{k}": v for k, v in norms.items()},
            **{f"grad/share_{k}": v / total for k, v in norms.items()}}
