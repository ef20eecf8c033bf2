"""Per-rollout training targets from an iteration's rollout table (docs/design.md §1.2–1.3).

Computed at train time from raw rewards, never stored with the rollouts. Each function takes
the iteration's table (N rows), the run's spec and the iteration number and returns (N,).
"""

from __future__ import annotations

import pandas as pd
import torch

from mintrl.algo.advantages import control_values, grpo_advantages, mentor_advantages


def rewards_of(df: pd.DataFrame) -> torch.Tensor:
    """(N,) float32 raw rewards."""
    return torch.tensor(df["reward"].to_numpy(), dtype=torch.float32)


def groups_of(df: pd.DataFrame) -> torch.Tensor:
    """(N,) int group ids: rollouts of one prompt share one."""
    return torch.tensor(pd.factorize(df["problem_id"])[0])


def group_advantages(df: pd.DataFrame, spec, iteration: int) -> torch.Tensor:
    """GRPO's group-normalised advantages (DeepSeekMath eq. 3)."""
    return grpo_advantages(rewards_of(df), groups_of(df), eps=spec.adv_eps)


def guided_advantages(df: pd.DataFrame, spec, iteration: int) -> torch.Tensor:
    """MENTOR's: on-policy rows group-normalised among themselves, guided rows only positive
    ones, weighted by the run's decaying schedule at ``iteration``."""
    guided = torch.tensor((df["kind"] == "guided").to_numpy())
    return mentor_advantages(rewards_of(df), groups_of(df), guided,
                             spec.guided_weight(iteration), eps=spec.adv_eps)


def control_value_targets(df: pd.DataFrame, spec, iteration: int) -> torch.Tensor:
    """MInTRL's V̂(x) (docs/design.md §1.2): in the intervention phase from the control rollouts
    only; after it every rollout is on-policy and V̂ is their mean."""
    kinds = df["kind"].to_numpy()
    is_control = torch.tensor((kinds == "control") | (kinds == "on-policy"))
    return control_values(rewards_of(df), groups_of(df), is_control, spec.beta1)
