"""The training-prompt filter (docs/design.md §2): the base policy's pass rate per prompt, and
the prompts kept. ``python -m mintrl.filter`` is its CLI.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mintrl.config import FilterSpec


def choose_prompts(rates: pd.DataFrame, spec: FilterSpec, seed: int) -> pd.Series:
    """Boolean ``kept`` per row of ``rates`` (columns problem_id, pass_rate)."""
    solved = np.flatnonzero(rates["pass_rate"].to_numpy() >= 1.0)
    keep = np.ones(len(rates), dtype=bool)
    keep[solved] = False
    n_keep = math.ceil(spec.keep_solved * len(solved))
    if n_keep:
        keep[np.random.default_rng(seed).choice(solved, n_keep, replace=False)] = True
    return pd.Series(keep, index=rates.index)
