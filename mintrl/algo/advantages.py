"""Advantage estimators: pure functions of rewards, registered by name (docs/design.md §1.3).

Rollout files hold raw rewards; advantages are computed here, at train time.
"""

from __future__ import annotations

import torch

from mintrl.registry import Registry

ADVANTAGES = Registry("advantage")
register_advantage = ADVANTAGES.register
get_advantage = ADVANTAGES.lookup


@register_advantage("grpo")
def grpo_advantages(rewards: torch.Tensor, group: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Group-normalised advantage ``(r - mean_g) / (std_g + eps)`` (GRPO, DeepSeekMath eq. 3).

    rewards: (N,) float; group: (N,) int, rollouts of one prompt share an id. Returns (N,).
    ``std`` is the unbiased sample std of the group (0 for a group of one); a group whose
    rewards are all equal gets advantage 0: no signal, the coverage problem MInTRL targets.
    """
    _, inverse = torch.unique(group, return_inverse=True)
    n = torch.zeros(int(inverse.max()) + 1, dtype=rewards.dtype).index_add_(
        0, inverse, torch.ones_like(rewards))
    mean = torch.zeros_like(n).index_add_(0, inverse, rewards) / n  # (G,)
    centred = rewards - mean[inverse]
    var = torch.zeros_like(n).index_add_(0, inverse, centred**2) / (n - 1).clamp(min=1)
    std = var.sqrt()[inverse]
    return torch.where(std > 0, centred / (std + eps), torch.zeros_like(centred))


@register_advantage("mentor")
def mentor_advantages(rewards: torch.Tensor, group: torch.Tensor, is_guided: torch.Tensor,
                      weight: float, eps: float = 1e-6) -> torch.Tensor:
    """MENTOR's advantages (arXiv 2510.04140; docs/design.md §1.3).

    On-policy samples: group-normalised within the prompt's on-policy samples only. Guided
    samples: ``weight · max(r − mean_on-policy, 0)``, only positive (a guided sample that fails
    is not pushed down: it was not the policy's own choice). rewards, group (prompt id),
    is_guided (bool): (N,). Returns (N,). A prompt without on-policy samples is an error.
    """
    guided = is_guided.bool()
    on = ~guided
    _, inverse = torch.unique(group, return_inverse=True)
    n_groups = int(inverse.max()) + 1
    counts = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(
        0, inverse[on], torch.ones_like(rewards[on]))
    if (counts == 0).any():
        raise ValueError("mentor_advantages: a prompt has no on-policy sample")
    mean_on = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(
        0, inverse[on], rewards[on]) / counts
    out = torch.zeros_like(rewards)
    out[on] = grpo_advantages(rewards[on], group[on], eps)
    out[guided] = weight * (rewards[guided] - mean_on[inverse[guided]]).clamp(min=0)
    return out


def control_values(rewards: torch.Tensor, group: torch.Tensor, is_control: torch.Tensor,
                   beta1: float | None = None) -> torch.Tensor:
    """V̂(x) per rollout from the control rollouts of its prompt only (docs/design.md §1.2).

    ``V̂ = β₁ log mean_j exp(r_j / β₁)`` over the prompt's control rewards; ``beta1=None`` is
    the paper's limit β₁ → ∞, the mean control reward (β₁ → 0 gives their max).
    rewards, group (prompt id), is_control (bool): (N,). Returns (N,). A prompt with no control
    rollout is an error: its value would be undefined.
    """
    _, inverse = torch.unique(group, return_inverse=True)
    n_groups = int(inverse.max()) + 1
    ctrl = is_control.bool()
    counts = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(
        0, inverse[ctrl], torch.ones_like(rewards[ctrl]))
    if (counts == 0).any():
        raise ValueError("control_values: a prompt has no control rollout")
    if beta1 is None:
        v = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(
            0, inverse[ctrl], rewards[ctrl]) / counts
    else:
        # log-mean-exp per group, stabilised by the group max; float64 because a large β₁
        # multiplies the rounding error of the log
        r = rewards[ctrl].double() / beta1
        m = torch.full((n_groups,), -torch.inf, dtype=torch.float64).scatter_reduce(
            0, inverse[ctrl], r, reduce="amax")
        s = torch.zeros(n_groups, dtype=torch.float64).index_add_(
            0, inverse[ctrl], torch.exp(r - m[inverse[ctrl]]))
        v = (beta1 * (m + torch.log(s / counts.double()))).to(rewards.dtype)
    return v[inverse]
