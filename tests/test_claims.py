"""The pre-registered claims (config/claims.yaml) and the rules that decide them."""

import json

import pandas as pd
import pytest

from mintrl.config.base import ConfigError
from mintrl.report.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Interval,
    load_claims,
    missing_rows,
    verdict,
)


def _claim(rule, compare, requires=(), margin=3.0):
    return Claim(id="c", paper="p", rule=rule, compare=compare, requires=list(requires),
                 benchmarks=["arith/hard"], margin=margin, source="ablation")


def test_above_needs_every_interval_above_zero():
    c = _claim("above", [("a", "b"), ("a", "d")])
    diffs = {("a", "b", "arith/hard"): Interval(5, 2, 8),
             ("a", "d", "arith/hard"): Interval(3, 0.5, 6)}
    v = verdict(c, diffs)
    assert v.outcome == REPRODUCED and v.deciding == ("a", "d", "arith/hard")  # weakest
    diffs[("a", "d", "arith/hard")] = Interval(1, -1, 3)
    assert verdict(c, diffs).outcome == INCONCLUSIVE
    # equal rows (both at 0 on hard) are not "above": not reproduced, named
    diffs[("a", "d", "arith/hard")] = Interval(0, 0, 0)
    v = verdict(c, diffs)
    assert v.outcome == NOT_REPRODUCED and "a − d on arith/hard" in v.reason


def test_within_is_equivalence_inside_the_margin():
    c = _claim("within", [("v", "ref")], margin=3.0)
    key = ("v", "ref", "arith/hard")
    assert verdict(c, {key: Interval(0.5, -2.0, 2.9)}).outcome == REPRODUCED
    assert verdict(c, {key: Interval(1.0, -2.0, 4.0)}).outcome == INCONCLUSIVE
    assert verdict(c, {key: Interval(-6.0, -9.0, -3.5)}).outcome == NOT_REPRODUCED


def test_an_equivalence_between_rows_that_never_moved_decides_nothing():
    c = _claim("within", [("v", "ref")], requires=[("ref", "base")])
    diffs = {("v", "ref", "arith/hard"): Interval(0, 0, 0),
             ("ref", "base", "arith/hard"): Interval(0.2, -0.1, 0.5)}
    v = verdict(c, diffs)
    assert v.outcome == INCONCLUSIVE and "requires ref − base" in v.reason
    diffs[("ref", "base", "arith/hard")] = Interval(9, 6, 12)
    assert verdict(c, diffs).outcome == REPRODUCED


def test_a_claim_is_never_decided_on_part_of_its_evidence():
    c = _claim("above", [("a", "b"), ("a", "d")])
    with pytest.raises(KeyError, match="no evaluation of a − d on arith/hard"):
        verdict(c, {("a", "b", "arith/hard"): Interval(5, 2, 8)})


def test_the_committed_claims_name_rows_of_the_default_config():
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs

    claims = load_claims("config/claims.yaml")
    rows = {r.entry for r in resolve_runs(load_config("config/config.yaml")).values()}
    for c in claims.claims:  # a renamed ablation must not leave a claim that is never decided
        assert missing_rows(c, rows | {"base", "teacher"}) == [], c.id
    assert {"const-best-overall", "const-above-proxy", "self-intervention",
            "robust-across-judges"} <= {c.id for c in claims.claims}
    assert missing_rows(claims.claims[0], rows - {"grpo"}) == ["grpo"]


def test_a_bad_claims_file_names_the_key(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims:\n  - {id: x, paper: p, rule: better, compare: [[a, b]],"
                   " benchmarks: [arith/hard], source: ablation}\n")
    with pytest.raises(ConfigError, match=r"claims.yaml: claims.0.rule"):
        load_claims(bad)


def _run(tmp_path, name, task, it, rewards):
    """An evaluation of ``name``: ``rewards[split]`` = per-problem rewards of 2 samples."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps(
        {"run": name, "task": task, "iteration": it, "splits": {s: {} for s in rewards}}))
    rows = [{"problem_id": f"{split}{i}", "split": split, "reward": r, "strict": r > 0,
             "step_accuracy": r, "sample": k}
            for split, rs in rewards.items() for i, r in enumerate(rs) for k in range(2)]
    pd.DataFrame(rows).to_parquet(folder / "samples.parquet")
    return folder / "metrics.json"


def test_the_stage_decides_from_evaluations_and_says_what_was_not_run(tmp_path):
    from mintrl.claims import main

    n = 40
    evals = [_run(tmp_path, "base", "arith", 0, {"hard": [0.0] * n}),
             # MInTRL-Const solves 30 of 40 hard problems; GRPO none
             _run(tmp_path, "mintrl-const-s0", "arith", 12, {"hard": [1.0] * 30 + [0.0] * 10}),
             _run(tmp_path, "grpo-s0", "arith", 12, {"hard": [0.0] * n})]
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n"
        "  - {id: beats-grpo, paper: p, rule: above, compare: [[mintrl-const, grpo]],"
        " benchmarks: [arith/hard], source: main_table}\n"
        "  - {id: judges, paper: p, rule: within, compare: [[judge-likelihood, mintrl-const]],"
        " requires: [[mintrl-const, base]], benchmarks: [arith/hard], source: ablation}\n"
        "  - {id: other-config, paper: p, rule: above, compare: [[mintrl-const, C99]],"
        " benchmarks: [arith/hard], source: ablation}\n")
    main(["--config", "config/config.yaml", "--claims", str(claims), "--evals",
          *map(str, evals), "--out", str(tmp_path / "out")])
    table = pd.read_csv(tmp_path / "out" / "verdicts.csv").set_index("claim")
    assert table.loc["beats-grpo", "outcome"] == REPRODUCED
    assert table.loc["beats-grpo", "mean"] == 75.0 and table.loc["beats-grpo", "lo"] > 50
    assert table.loc["judges", "outcome"] == "not run"  # no run entry judge-likelihood...
    assert "no run entry judge-likelihood" not in table.loc["judges", "reason"]  # ...it has
    assert table.loc["other-config", "reason"] == "the config has no run entry C99"
    md = (tmp_path / "out" / "verdicts.md").read_text()
    assert "| `beats-grpo` | **reproduced** | mintrl-const − grpo on arith/hard: +75.0" in md
    # the figure's evidence: every evaluated comparison of the claims the config can run
    # (judges' requirement is there; its comparison has no evaluation; C99 has no entry)
    evidence = pd.read_csv(tmp_path / "out" / "comparisons.csv")
    assert evidence[["claim", "role", "row", "versus", "mean"]].values.tolist() == [
        ["beats-grpo", "compare", "mintrl-const", "grpo", 75.0],
        ["judges", "requires", "mintrl-const", "base", 75.0]]
    assert (tmp_path / "out" / "verdicts.png").read_bytes()[:4] == b"\x89PNG"
