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
    tokens, or (B, T) per token (OPD); ref_logprobs: (B, T) of a frozen reference when
    ``kl_coef > 0``.
    Per token: ``-min(ρ A, clip(ρ, 1-ε, 1+ε) A) + kl_coef · k3``, with
    ``ρ = exp(logπ_θ - logπ_old)`` and ``k3 = exp(ref - logπ_θ) - (ref - logπ_θ) - 1``
    (Schulman's unbiased KL estimator).
    Summed over tokens and divided by ``token_total`` (the minibatch's response tokens, so
    micro-batches accumulate to the token mean; default: this call's own token count).
    """
    mask = mask.to(logprobs.dtype)
    total = float(token_total) if token_total else mask.sum().clamp(min=1.0)
    ratio = torch.exp(logprobs - old_logprobs)  # (B, T)
    adv = (advantages[:, None] if advantages.dim() == 1 else advantages).to(logprobs.dtype)
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


# MENTOR's loss is GRPO's clipped surrogate; what differs is its advantages (guided samples get
# only positive, decaying ones: mintrl.advantages.mentor_advantages).
register_objective("mentor")(grpo_loss)


@register_objective("opd")
def opd_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    teacher_logprobs: torch.Tensor,
    mask: torch.Tensor,
    *,
    distill_weight: float = 1.0,
    reward_advantages: torch.Tensor | None = None,
    reward_weight: float = 0.0,
    clip_eps: float = 0.2,
    token_total: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """On-policy distillation with the reverse KL (DESIGN.md §1.3), as a policy gradient.

    Per-token advantage ``A_k = w · (log π_I(y_k|·) − log π_old(y_k|·))``, **detached**, in the
    clipped surrogate with ratio π_θ/π_old: a sampled token the teacher prefers more than the
    policy goes up, the others go down. (Back-propagating ``−(log π_θ − log π_I)`` directly
    would push every sampled token down.) Optionally ``+ reward_weight · A_reward`` per
    sequence (group-normalised reward advantages, (B,)).
    logprobs, old_logprobs, teacher_logprobs, mask: (B, T). Returns (loss, stats) with
    ``reverse_kl``: Σ over tokens of ``log π_old − log π_I`` (a k1 estimate, per-token mean
    once divided by the token count).
    """
    adv = distill_weight * (teacher_logprobs - old_logprobs).detach()  # (B, T)
    if reward_weight and reward_advantages is not None:
        adv = adv + reward_weight * reward_advantages[:, None].to(adv.dtype)
    loss, stats = grpo_loss(logprobs, old_logprobs, adv * mask, mask, clip_eps=clip_eps,
                            token_total=token_total)
    m = mask.to(logprobs.dtype)
    stats["reverse_kl"] = float(masked_sum((old_logprobs - teacher_logprobs).detach(), m))
    return loss, stats


@register_objective("sft")
def sft_loss(
    logprobs: torch.Tensor, mask: torch.Tensor, *, token_total: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Next-token negative log-likelihood on the masked tokens (SFT+GRPO's SFT stage).

    logprobs, mask: (B, T). Summed and divided by ``token_total`` (the minibatch's tokens;
    default: this call's own count), so micro-batches accumulate to the token mean.
    """
    mask = mask.to(logprobs.dtype)
    total = float(token_total) if token_total else mask.sum().clamp(min=1.0)
    loss = -masked_sum(logprobs, mask) / total
    return loss, {"nll_sum": float(-masked_sum(logprobs.detach(), mask))}


@register_objective("corrections")
def corrections_loss(
    logprobs: torch.Tensor, intervention: torch.Tensor, *, token_total: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The corrections-only control (issue 6): next-token NLL on the intervention tokens of the
    semi-on-policy rollouts only, no reward: what MInTRL's regression would learn if it only
    copied the corrections. logprobs, intervention (1 at tokens an intervener wrote): (B, T);
    ``token_total``: the minibatch's intervention tokens."""
    return sft_loss(logprobs, intervention, token_total=token_total)
