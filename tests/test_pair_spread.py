"""benchmarks/pair_spread.py: the range of each cell over one-pair main tables."""

from pathlib import Path

import pandas as pd
import pytest
from conftest import load_benchmark


def write(folder: Path, base: float, grpo: float, seeds: int = 1) -> Path:
    folder.mkdir(parents=True)
    pd.DataFrame([
        {"row": "base", "benchmark": "arith/hard", "metric": "pass@1", "mean": base,
         "seeds": seeds, "delta": float("nan")},
        {"row": "grpo", "benchmark": "arith/hard", "metric": "pass@1", "mean": grpo,
         "seeds": seeds, "delta": grpo - base},
    ]).to_csv(folder / "table_stats.csv", index=False)
    return folder


def test_the_range_over_pairs_of_a_cell_and_of_its_difference_to_the_base(tmp_path):
    out = tmp_path / "spread.md"
    a, b = write(tmp_path / "a", 10.0, 14.0), write(tmp_path / "b", 16.0, 17.0)
    load_benchmark("pair_spread").main(["--tables", f"0,0={a}", f"1,1={b}", "--out", str(out)])
    text = out.read_text()
    assert "| grpo | arith/hard | 14.0 | 17.0 | 3.0 | +4.0 | +1.0 | 3.0 |" in text
    assert "| base | arith/hard | 10.0 | 16.0 | 6.0 |" in text
    assert "Largest range over pairs: 6.0 pp (base/arith/hard)" in text


def test_a_table_over_several_pairs_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="several pairs"):
        a = write(tmp_path / "a", 1.0, 2.0, seeds=3)
        load_benchmark("pair_spread").main(["--tables", f"0,0={a}", "--out", str(tmp_path / "x")])


def test_one_summary_of_several_pairs_is_split_by_each_runs_pair(tmp_path):
    """`snakemake main_table`'s one summary: a run's latest evaluation, minus its own lab's base."""
    config = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
    folder = tmp_path / "main_table"
    folder.mkdir()
    pd.DataFrame([
        {"run": "base", "benchmark": "arith/hard", "iteration": 0, "pass@1": 0.10},
        {"run": "base-lab1", "benchmark": "arith/hard", "iteration": 0, "pass@1": 0.16},
        {"run": "grpo-s0", "benchmark": "arith/hard", "iteration": 4, "pass@1": 0.90},
        {"run": "grpo-s0", "benchmark": "arith/hard", "iteration": 12, "pass@1": 0.14},
        {"run": "grpo-lab1-s1", "benchmark": "arith/hard", "iteration": 12, "pass@1": 0.17},
    ]).assign(task="arith").to_csv(folder / "evaluations.csv", index=False)
    out = tmp_path / "spread.md"
    load_benchmark("pair_spread").main(["--summary", str(folder), "--config", str(config),
                                        "--out", str(out)])
    text = out.read_text()
    assert "| grpo | arith/hard | 14.0 | 17.0 | 3.0 | +4.0 | +1.0 | 3.0 |" in text
    assert "| base | arith/hard | 10.0 | 16.0 | 6.0 |" in text


def test_a_run_the_config_does_not_name_is_refused(tmp_path):
    config = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
    (tmp_path / "s").mkdir()
    pd.DataFrame([{"run": "grpo-s9", "benchmark": "arith/hard", "iteration": 1, "pass@1": 0.1,
                   "task": "arith"}]).to_csv(tmp_path / "s" / "evaluations.csv", index=False)
    with pytest.raises(SystemExit, match="'grpo-s9' is not in"):
        load_benchmark("pair_spread").main(["--summary", str(tmp_path / "s"), "--config",
                                            str(config), "--out", str(tmp_path / "x")])
