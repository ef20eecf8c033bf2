import json

from mintrl.summarize import eval_records, results_table, to_markdown


def _eval(tmp_path, run, task, it, easy, hard):
    path = tmp_path / f"{run}_{task}_{it}.json"
    path.write_text(json.dumps({"run": run, "task": task, "iteration": it, "splits": {
        "easy": {"pass@1": easy}, "hard": {"pass@1": hard}}}))
    return path


def test_table_rows_are_runs_at_their_last_evaluation_and_columns_benchmarks(tmp_path):
    paths = [_eval(tmp_path, "base", "arith", 0, 0.9, 0.1),
             _eval(tmp_path, "grpo-s0", "arith", 10, 0.5, 0.5),
             _eval(tmp_path, "grpo-s0", "arith", 20, 0.92, 0.2)]
    table = results_table(eval_records(paths), ["base", "grpo-s0"])
    assert list(table.index) == ["base", "grpo-s0"]
    assert table.loc["grpo-s0"].to_dict() == {"arith/easy": 92.0, "arith/hard": 20.0,
                                              "average": 56.0}
    assert "| grpo-s0 | 92.0 | 20.0 | 56.0 |" in to_markdown(table)


def test_an_evaluation_without_run_name_is_named(tmp_path):
    import pytest

    path = tmp_path / "m.json"
    path.write_text(json.dumps({"splits": {}}))
    with pytest.raises(SystemExit, match="m.json: no 'run'"):
        eval_records([path])


def test_a_run_on_fewer_benchmarks_gets_no_average(tmp_path):
    paths = [_eval(tmp_path, "base", "arith", 0, 0.9, 0.1),
             _eval(tmp_path, "base", "intfn", 0, 1.0, 0.0),
             _eval(tmp_path, "opd", "arith", 2, 0.8, 0.2)]
    table = results_table(eval_records(paths), ["base", "opd"])
    assert table.loc["base", "average"] == 50.0
    assert "| opd | 80.0 | 20.0 | – | – | – |" in to_markdown(table)
