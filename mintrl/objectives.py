"""Training objectives: pure functions of tensors, registered by name (DESIGN.md §1.2–1.3).

Each takes per-token tensors of one micro-batch and returns ``(loss, stats)``; the trainer
owns models, batching and the optimizer. Shapes: B sequences, T response positions.
"""

from __future__ import annotations

import torch

from mintrl.registry import Registry

OBJECTIVES = Registry("objective")
register_objective = OBJECTIVES.register
get_objective = OBJECTIVES.lookup


def masked_sum(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum()


@register_objective("grpo")
def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float = 0.2,
    kl_coef: float = 0.0,
    ref_logprobs: torch.Tensor | None = None,
    token_total: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level clipped surrogate with ratio π_θ/π_old (PPO/GRPO), optional k3 KL.

    logprobs, old_logprobs, mask: (B, T); advantages: (B,) broadcast over the sequence's
    tokens; ref_logprobs: (B, T) of a frozen reference when ``kl_coef > 0``.
    Per token: ``-min(ρ A, clip(ρ, 1-ε, 1+ε) A) + kl_coef · k3``, with
    ``ρ = exp(logπ_θ - logπ_old)`` and ``k3 = exp(ref - logπ_θ) - (ref - logπ_θ) - 1``
    (Schulman's unbiased KL estimator).
    Summed over tokens and divided by ``token_total`` (the minibatch's response tokens, so
    micro-batches accumulate to the token mean; default: this call's own token count).
    """
    mask = mask.to(logprobs.dtype)
    total = float(token_total) if token_total else mask.sum().clamp(min=1.0)
    ratio = torch.exp(logprobs - old_logprobs)  # (B, T)
    adv = advantages[:, None].to(logprobs.dtype)  # (B, 1)
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + clip_eps) * adv
    per_token = -torch.minimum(unclipped, clipped)
    stats: dict[str, float] = {}
    if kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("grpo_loss: kl_coef > 0 needs ref_logprobs")
        d = ref_logprobs - logprobs
        k3 = torch.exp(d) - d - 1.0
        per_token = per_token + kl_coef * k3
        stats["kl"] = float(masked_sum(k3.detach(), mask))
    loss = masked_sum(per_token, mask) / total
    with torch.no_grad():
        stats["clip_frac"] = float(masked_sum((unclipped != clipped).to(mask.dtype), mask))
        stats["ratio_max"] = float((ratio * mask).max()) if mask.any() else 1.0
    return loss, stats


@register_objective("regression")
def advantage_regression_loss(
    seq_logprobs: torch.Tensor,
    anchor_logprobs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    *,
    beta2: float,
    n_total: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """MInTRL's sequence-level advantage regression (DESIGN.md §1.2; no importance ratios):

    ``L = mean over rollouts of ( β₂ · [log π_θ(y|x) − anchor(x, y)] − (r(x, y) − V̂(x)) )²``

    seq_logprobs: (B,) ``log π_θ(y|x)``, the sum over every response token (intervention tokens
    included); anchor_logprobs: (B,) fixed during the iteration (Proxy / Const / Intervener);
    rewards, values: (B,). Divided by ``n_total`` (the minibatch's rollouts, so micro-batches
    accumulate to the minibatch mean; default B).
    """
    residual = beta2 * (seq_logprobs - anchor_logprobs) - (rewards - values)  # (B,)
    total = float(n_total) if n_total else float(len(residual))
    loss = (residual**2).sum() / total
    return loss, {"residual_abs": float(residual.detach().abs().sum())}
