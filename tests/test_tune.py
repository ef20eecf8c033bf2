"""The tuning protocol (issue 25): one learning-rate grid for every row, scored on medium and
hard, a point that forgets the easy problems rejected."""

import pandas as pd
import pytest

from mintrl.config import ConfigError, parse_config
from mintrl.config.runs import resolve_runs
from mintrl.config.tuning import choose, guard_interval


def test_a_point_that_forgets_the_easy_problems_is_not_chosen():
    scored = {
        "tune-grpo-0": {"row": "grpo", "point": {"lr": 1e-5}, "pass@1": 0.30,
                        "guard": [0.0, -1.0, 1.0], "rejected": False},
        "tune-grpo-1": {"row": "grpo", "point": {"lr": 1e-4}, "pass@1": 0.60,
                        "guard": [-20.0, -30.0, -10.0], "rejected": True},
        "tune-grpo-2": {"row": "grpo", "point": {"lr": 3e-4}, "pass@1": 0.45,
                        "guard": [-2.0, -6.0, 1.0], "rejected": False},
    }
    chosen = choose(scored)["grpo"]
    assert chosen["values"] == {"lr": 3e-4} and chosen["pass@1"] == 0.45
    assert [g["rejected"] for g in chosen["grid"]] == [False, True, False]
    assert chosen["all_rejected"] is False


def test_the_guard_interval_is_paired_problem_by_problem():
    base = pd.Series([1.0, 0.0, 1.0, 0.0] * 25, index=[f"p{i}" for i in range(100)])
    # the same problems one point lower each: paired, the interval is that point exactly
    mean, lo, hi = guard_interval(base - 0.01, base)
    assert mean == pytest.approx(-1.0) and lo == pytest.approx(-1.0) and hi == pytest.approx(-1.0)
    with pytest.raises(SystemExit, match="other problems"):
        guard_interval(base.iloc[:50], base.iloc[50:])


def _config(tune: dict) -> dict:
    from pathlib import Path

    import yaml

    data = yaml.safe_load(Path("tests/micro.yaml").read_text())
    data["tune"] = {"tasks": ["arith"]} | tune
    return data


def test_every_row_gets_the_shared_learning_rates_times_its_own_knob():
    runs = resolve_runs(parse_config(_config({
        "lr": [1e-5, 1e-4, 1e-3], "grids": {"grpo": {"clip_eps": [0.1, 0.2]},
                                            "mintrl-proxy": {"beta2": [0.1, 1.0]}}})))
    tune = {n: r.spec for n, r in runs.items() if r.group == "tune"}
    assert len(tune) == 12
    assert sorted({(s.lr, s.clip_eps) for n, s in tune.items() if "grpo" in n}) == [
        (lr, c) for lr in (1e-5, 1e-4, 1e-3) for c in (0.1, 0.2)]
    with pytest.raises(ConfigError, match="tune.grids.grpo.lr: the learning rates are tune.lr"):
        resolve_runs(parse_config(_config({"lr": [1e-5, 1e-4, 1e-3],
                                           "grids": {"grpo": {"lr": [1e-5]}}})))
    with pytest.raises(ConfigError, match="spanning at least 30x"):
        parse_config(_config({"lr": [1e-5, 2e-5, 1e-4], "grids": {}}))


def test_ablations_and_variants_run_at_the_tuned_values_of_their_row():
    """An ablation of the reference row's method moves one knob from that row's tuned point
    (not from a step size of its own); a variant names its row with `tuned_as`; a tuned
    control entry keeps its own values."""
    data = _config({})
    data["ablation_reference"] = "mintrl-proxy"
    data["runs"] += [
        {"method": "mintrl", "group": "beta2", "name": "b1", "overrides": {"beta2": 1.0}},
        {"method": "grpo", "group": "beta2", "name": "g"},
        {"method": "corrections_only", "group": "control", "name": "co"},
        {"method": "corrections_only", "group": "control", "name": "co-wrong",
         "tuned_as": "co", "overrides": {"wrong_correction_rate": 0.25}},
    ]
    data["tuned"] = {"mintrl-proxy": {"lr": 3e-4, "beta2": 0.3}, "co": {"lr": 1e-3}}
    runs = resolve_runs(parse_config(data))
    assert (runs["b1"].spec.lr, runs["b1"].spec.beta2) == (3e-4, 1.0)
    assert runs["co"].spec.lr == 1e-3
    assert (runs["co-wrong"].spec.lr, runs["co-wrong"].spec.wrong_correction_rate) == (1e-3, 0.25)
    assert runs["g"].spec.lr == parse_config(data).rl.lr  # another method's inherits nothing
    data["runs"][-1]["tuned_as"] = "nobody"
    with pytest.raises(ConfigError, match=r"runs\.\d+\.tuned_as: no run entry 'nobody'"):
        parse_config(data)
