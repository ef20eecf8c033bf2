"""benchmarks/compare_runs.py: two workflows' tables and Parquet files, compared."""

import pandas as pd
from conftest import load_benchmark


def _workdir(root, reward):
    (root / "results/summary/main").mkdir(parents=True)
    (root / "results/summary/main/table.md").write_text("| row | x |\n| base | 1.0 |\n")
    (root / "results/runs/arith/grpo-s0/iter_1").mkdir(parents=True)
    pd.DataFrame({"reward": [reward, 1.0], "seconds": [3.0, 4.0]}).to_parquet(
        root / "results/runs/arith/grpo-s0/iter_1/rollouts.parquet")
    return root


def test_equal_runs_pass_and_a_changed_reward_is_named(tmp_path):
    compare_runs = load_benchmark("compare_runs")
    ref = _workdir(tmp_path / "ref", 0.0)
    same = _workdir(tmp_path / "same", 0.0)
    # timing columns may differ
    pd.DataFrame({"reward": [0.0, 1.0], "seconds": [9.0, 9.0]}).to_parquet(
        same / "results/runs/arith/grpo-s0/iter_1/rollouts.parquet")
    other = _workdir(tmp_path / "other", 1.0)
    assert compare_runs.main([str(ref), str(same)]) == 0
    out = tmp_path / "report.md"
    assert compare_runs.main([str(ref), str(other), "--out", str(out)]) == 1
    assert "differing: 1: results/runs/arith/grpo-s0/iter_1/rollouts.parquet" in out.read_text()
