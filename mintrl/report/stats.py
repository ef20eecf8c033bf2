"""Statistics of the results tables: mean ± std over seeds and a bootstrap interval over
problems and seeds (pure functions of arrays), and the order of their columns."""

from __future__ import annotations

import numpy as np


def cell_stats(matrices: list[np.ndarray], n_boot: int = 1000, seed: int = 0,
               level: float = 0.95) -> dict[str, float]:
    """Statistics of one table cell.

    ``matrices``: one (S, P_b) array per benchmark the cell averages over (one for a benchmark
    column, all of them for "average"): per seed (rows, the same seeds in every array) the
    per-problem score (columns). The cell's value is the mean over benchmarks of the mean over
    seeds and problems. Returns ``mean``; ``std`` over seeds of that per-seed value (0 for one
    seed); ``lo``/``hi``, the percentile bootstrap interval resampling seeds and, within each
    benchmark, problems, with replacement; ``seeds``.
    """
    s = matrices[0].shape[0]
    if any(m.shape[0] != s for m in matrices):
        raise ValueError("cell_stats: every benchmark needs the same seeds")
    per_seed = np.mean([m.mean(axis=1) for m in matrices], axis=0)  # (S,)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        rows = rng.integers(s, size=s)
        draws[b] = np.mean([m[rows][:, rng.integers(m.shape[1], size=m.shape[1])].mean()
                            for m in matrices])
    tail = (1 - level) / 2 * 100
    return {"mean": float(per_seed.mean()), "std": float(per_seed.std(ddof=1)) if s > 1 else 0.0,
            "lo": float(np.percentile(draws, tail)), "hi": float(np.percentile(draws, 100 - tail)),
            "seeds": s}


SPLIT_ORDER = {"easy": 0, "medium": 1, "hard": 2}  # a toy's splits, easiest first


def benchmark_order(benchmarks) -> list[str]:
    """``<task>/<split>`` names by task, a toy's splits easiest first, then the others by
    name; ``average`` last."""
    def key(b: str):
        task, _, split = b.partition("/")
        return (b == "average", task, SPLIT_ORDER.get(split, len(SPLIT_ORDER)), split)
    return sorted(benchmarks, key=key)
