"""Training objectives (docs/design.md §1.2–1.3): pure functions of tensors, and the one interface
the trainer calls them through.

Each pure function takes per-token tensors of one micro-batch and returns ``(loss, stats)``;
the trainer owns models, batching and the optimizer. Shapes: B sequences, T response
positions. Each is registered by name as an :class:`Objective`: the inputs it needs (a
subset of :class:`LossInputs`), what its loss averages over, and one call
``objective.loss(inputs, spec)``, so the trainer prepares only what is needed and calls
every objective the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd
import torch

from mintrl.algo.train_targets import control_value_targets, group_advantages, guided_advantages
from mintrl.registry import Registry

OBJECTIVES = Registry("objective")
get_objective = OBJECTIVES.lookup


def masked_sum(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum()


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


def advantage_regression_loss(
    seq_logprobs: torch.Tensor,
    anchor_logprobs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    *,
    beta2: float,
    n_total: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """MInTRL's sequence-level advantage regression (docs/design.md §1.2; no importance ratios):

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
    """On-policy distillation with the reverse KL (docs/design.md §1.3), as a policy gradient.

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


def corrections_loss(
    logprobs: torch.Tensor, intervention: torch.Tensor, *, token_total: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The corrections-only control (issue 6): next-token NLL on the intervention tokens of the
    semi-on-policy rollouts only, no reward: what MInTRL's regression would learn if it only
    copied the corrections. logprobs, intervention (1 at tokens an intervener wrote): (B, T);
    ``token_total``: the minibatch's intervention tokens."""
    return sft_loss(logprobs, intervention, token_total=token_total)


# --- the interface: one input type, one call --------------------------------------------

LOSS_INPUTS = frozenset({"old_logprobs", "ref_logprobs", "teacher_logprobs", "anchor_logprobs",
                         "rewards", "advantages", "values"})


@dataclass(frozen=True)
class LossInputs:
    """One micro-batch's tensors for an objective: b rows, T positions. The trainer fills the
    fields the objective lists in ``needs`` and leaves the others None."""

    logprobs: torch.Tensor  # (b, T) log π_θ of each token, with grad (0 off the response)
    mask: torch.Tensor  # (b, T) 1 at the tokens the loss averages over (``Objective.over``)
    token_total: float  # the minibatch's tokens under ``mask`` (micro-batches add to its mean)
    rollout_total: int  # the minibatch's rollouts
    old_logprobs: torch.Tensor | None = None  # (b, T) log π_t, fixed for the iteration
    ref_logprobs: torch.Tensor | None = None  # (b, T) the KL reference's (when kl_coef > 0)
    teacher_logprobs: torch.Tensor | None = None  # (b, T) log π_I of the sampled tokens
    anchor_logprobs: torch.Tensor | None = None  # (b,) the regression's anchor
    rewards: torch.Tensor | None = None  # (b,)
    advantages: torch.Tensor | None = None  # (b,)
    values: torch.Tensor | None = None  # (b,) V̂(x) of each rollout's prompt


Targets = Callable[[pd.DataFrame, object, int], torch.Tensor]  # (table, spec, iteration) -> (N,)


@dataclass(frozen=True)
class Objective:
    """A registered objective: ``loss(inputs, spec) -> (loss, stats)``; ``needs``: the optional
    fields of :class:`LossInputs` it reads (``ref_logprobs``: only while ``spec.kl_coef > 0``);
    ``over``: the tokens its loss averages over ("response"; "intervention": the tokens an
    intervener wrote; "rollouts": a sequence-level loss); ``advantages`` / ``values``: how
    its per-rollout targets come from the iteration's table."""

    loss: Callable[[LossInputs, object], tuple[torch.Tensor, dict[str, float]]]
    needs: frozenset[str] = field(default_factory=frozenset)
    over: Literal["response", "intervention", "rollouts"] = "response"
    advantages: Targets | None = None
    values: Targets | None = None

    def __post_init__(self):
        if unknown := self.needs - LOSS_INPUTS:
            raise ValueError(f"objective needs unknown inputs {sorted(unknown)}; "
                             f"known: {sorted(LOSS_INPUTS)}")
        if ("advantages" in self.needs) != (self.advantages is not None):
            raise ValueError("an objective that needs advantages says how they are computed")
        if ("values" in self.needs) != (self.values is not None):
            raise ValueError("an objective that needs values says how they are computed")


def register_objective(name: str, objective: Objective) -> Objective:
    """Register ``objective`` under ``name`` (a duplicate name is an error)."""
    return OBJECTIVES.register(name)(objective)


def _clipped(x: LossInputs, spec) -> tuple[torch.Tensor, dict[str, float]]:
    return grpo_loss(x.logprobs, x.old_logprobs, x.advantages, x.mask, clip_eps=spec.clip_eps,
                     kl_coef=spec.kl_coef, ref_logprobs=x.ref_logprobs,
                     token_total=x.token_total)


_CLIPPED_NEEDS = frozenset({"old_logprobs", "ref_logprobs", "advantages"})

register_objective("grpo", Objective(_clipped, _CLIPPED_NEEDS, advantages=group_advantages))
# MENTOR's loss is GRPO's clipped surrogate; what differs is its advantages (guided samples get
# only positive, decaying ones: mintrl.algo.advantages.mentor_advantages).
register_objective("mentor", Objective(_clipped, _CLIPPED_NEEDS, advantages=guided_advantages))
register_objective("opd", Objective(
    lambda x, spec: opd_loss(x.logprobs, x.old_logprobs, x.teacher_logprobs, x.mask,
                             distill_weight=spec.distill_weight,
                             reward_advantages=x.advantages,
                             reward_weight=spec.distill_reward_weight, clip_eps=spec.clip_eps,
                             token_total=x.token_total),
    frozenset({"old_logprobs", "teacher_logprobs", "advantages"}),
    advantages=group_advantages))
register_objective("regression", Objective(
    lambda x, spec: advantage_regression_loss(x.logprobs.sum(-1), x.anchor_logprobs,
                                              x.rewards, x.values, beta2=spec.beta2,
                                              n_total=x.rollout_total),
    frozenset({"anchor_logprobs", "rewards", "values"}), over="rollouts",
    values=control_value_targets))
register_objective("sft", Objective(
    lambda x, spec: sft_loss(x.logprobs, x.mask, token_total=x.token_total)))
# no reward enters: the control copies corrections only
register_objective("corrections", Objective(
    lambda x, spec: corrections_loss(x.logprobs, x.mask, token_total=x.token_total),
    over="intervention"))
