"""benchmarks/fact_values.py: which value a policy writes for each fact on the hard split."""

import json

import pandas as pd
from conftest import load_benchmark


def test_shares_of_true_values_and_first_digits_per_fact(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "results" / "data" / "arith"
    data.mkdir(parents=True)
    pd.DataFrame([
        {"id": "p1", "solution": "#0=35\n\n806+35=841\n\nanswer: 841",
         "spec": json.dumps({"facts": {"keys": [0]}})},
        {"id": "p2", "solution": "#3=91\n\n1+91=92\n\n#0=35\n\n92+35=127\n\nanswer: 127",
         "spec": json.dumps({"facts": {"keys": [3, 0]}})},
    ]).to_parquet(data / "hard.parquet")
    samples = tmp_path / "samples.parquet"
    pd.DataFrame([
        {"problem_id": "p1", "split": "hard", "response": "#0=35\n\n806+35=841"},
        {"problem_id": "p1", "split": "hard", "response": "#0=54\n\n806+54=860"},
        {"problem_id": "p2", "split": "hard", "response": "#3=91\n\n1+91=92\n\n#0=30"},
        {"problem_id": "p2", "split": "hard", "response": "1+91=92"},  # no lookup written
        {"problem_id": "p1", "split": "easy", "response": "#0=99"},  # another split: ignored
    ]).to_parquet(samples)
    values = load_benchmark("fact_values").fact_values(samples, data / "hard.parquet", "arith")
    assert values[0]["true"] == "35" and values[0]["samples"] == 4
    assert values[0]["exact"] == 0.25  # 35 once in four
    assert values[0]["first_digit"] == 0.5  # 35 and 30
    assert dict(values[0]["top"])["none"] == 1
    assert values[3] == {"true": "91", "exact": 0.5, "first_digit": 0.5,
                         "top": [("91", 1), ("none", 1)], "samples": 2}
    load_benchmark("fact_values").main(["--task", "arith", f"base={samples}"])
    text = (tmp_path / "results" / "benchmarks" / "fact_values_arith.md").read_text()
    assert "| base | 0 | 35 | 25.0 | 50.0 |" in text
