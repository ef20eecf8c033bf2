"""MLflow logging through mintrl.report.tracking: idempotent by (run, key, step), serialised."""

import threading
from pathlib import Path

from mintrl.report.tracking import log_run, read_runs


def _log(uri, metrics, params=None, name="grpo-s0"):
    return log_run(uri, "exp", name, params=params or {"rl.lr": "2e-05"},
                   tags={"method": "grpo", "seed": "0"}, metrics=metrics)


def test_logging_twice_keeps_one_point_per_key_and_step(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = _log(uri, [("rollout/arith/reward", 0.1, 1), ("rollout/arith/reward", 0.2, 2)])
    again = _log(uri, [("rollout/arith/reward", 0.1, 1), ("rollout/arith/reward", 0.2, 2),
                       ("rollout/arith/reward", 0.3, 3)])  # a resumed run adds iteration 3
    assert first["new_metrics"] == 2 and again["new_metrics"] == 1
    assert again["run_id"] == first["run_id"]
    (run,) = read_runs(uri, "exp")
    assert run["metrics"]["rollout/arith/reward"] == [(1, 0.1), (2, 0.2), (3, 0.3)]
    assert run["tags"]["method"] == "grpo" and run["params"]["rl.lr"] == "2e-05"
    assert run["name"] == "grpo-s0"


def test_a_changed_config_starts_a_new_mlflow_run(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    a = _log(uri, [("x", 1.0, 1)], params={"rl.lr": "2e-05"})
    b = _log(uri, [("x", 1.0, 1)], params={"rl.lr": "3e-05"})
    assert a["run_id"] != b["run_id"] and a["config_hash"] != b["config_hash"]
    assert len(read_runs(uri, "exp")) == 2


def test_parallel_writers_do_not_collide(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _log(uri, [("x", 0.0, 0)], name="warm")  # create the store once
    errors = []

    def worker(i):
        try:
            _log(uri, [(f"m{i}", float(s), s) for s in range(20)], name=f"run{i}")
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    runs = {r["name"]: r for r in read_runs(uri, "exp")}
    assert all(len(runs[f"run{i}"]["metrics"][f"m{i}"]) == 20 for i in range(4))


def test_each_lab_seeds_base_is_an_mlflow_run_of_its_own(tmp_path):
    """`base` and `base-lab1` are two runs, tagged with their lab seed; lab 0's params (whose
    hash finds a finished run again) have no lab seed key, so they are what they were."""
    import json

    import pytest
    import yaml

    from mintrl import track
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs
    from mintrl.report.run_metrics import run_params

    cfg = yaml.safe_load(Path("tests/micro.yaml").read_text())
    cfg["runs"][0]["lab_seeds"] = [0, 1]
    cfg["tracking_uri"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    for name, lab in (("base", 0), ("base-lab1", 1)):
        metrics = tmp_path / f"{name}.json"
        metrics.write_text(json.dumps({"run": name, "task": "arith", "iteration": 0,
                                       "splits": {"easy": {"pass@1": 0.1 * (lab + 1)}}}))
        track.main(["--config", str(config), "--run", name, "--evals", str(metrics), "--out",
                    str(tmp_path / f"{name}.out.json")])
    runs = {r["name"]: r for r in read_runs(cfg["tracking_uri"], "mintrl")}
    assert runs["base"]["tags"]["lab_seed"] == "0" and runs["base-lab1"]["tags"]["lab_seed"] == "1"
    assert runs["base-lab1"]["params"]["run.lab_seed"] == "1"
    assert "run.lab_seed" not in runs["base"]["params"]
    # named and scaled as the tables show them: percent, pass1/<task>/<split>
    assert [(k, round(v, 6)) for k, v in runs["base-lab1"]["metrics"]["pass1/arith/easy"]] \
        == [(0, 20.0)]
    loaded = load_config(config)
    named = resolve_runs(loaded)
    assert "run.lab_seed" not in run_params(loaded, named["grpo-s0"])[0]
    assert run_params(loaded, named["grpo-lab1-s1"])[0]["run.lab_seed"] == "1"
    with pytest.raises(SystemExit, match="unknown run 'nobody'"):
        track.main(["--config", str(config), "--run", "nobody", "--out",
                    str(tmp_path / "t.json")])


def test_mlflow_runs_carry_their_methods_params_the_table_and_open_on_runs(tmp_path):
    """The experiment opens on its runs (MLflow 3's kind tag); a teacher is a run; GRPO carries
    no MInTRL knob; a summary run holds its table as an MLflow table."""
    import json
    from pathlib import Path

    import pandas as pd
    import yaml
    from mlflow.tracking import MlflowClient

    from mintrl import track
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs
    from mintrl.report.run_metrics import run_params

    cfg = yaml.safe_load(Path("tests/micro.yaml").read_text())
    cfg["tracking_uri"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg))
    metrics = tmp_path / "teacher.json"
    metrics.write_text(json.dumps({"run": "teacher", "task": "arith", "iteration": 0,
                                   "seconds": 5.0, "splits": {"hard": {"pass@1": 0.9,
                                                                       "strict": 0.85}}}))
    table = tmp_path / "table.csv"
    pd.DataFrame({"row": ["base", "grpo"], "arith/hard": [1.0, 2.5]}).to_csv(table, index=False)
    for run, extra in (("teacher", ["--evals", str(metrics)]),
                       ("summary-main", ["--artifacts", str(table)])):
        track.main(["--config", str(config), "--run", run, *extra, "--out",
                    str(tmp_path / f"{run}.out.json")])
    runs = {r["name"]: r for r in read_runs(cfg["tracking_uri"], "mintrl")}
    assert runs["teacher"]["tags"]["row"] == "teacher"
    assert [v for _, v in runs["teacher"]["metrics"]["strict/arith/hard"]] == [85.0]
    assert "table.json" in runs["summary-main"]["artifacts"]
    exp = MlflowClient(cfg["tracking_uri"]).get_experiment_by_name("mintrl")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    named = resolve_runs(load_config(config))
    grpo = run_params(load_config(config), named["grpo-s0"])[0]
    assert "rl.clip_eps" in grpo and "rl.beta2" not in grpo and "rl.n_semi" not in grpo
    assert "run.method" not in grpo and grpo["rl.method"] == "grpo"


def test_every_run_of_the_default_config_has_its_own_mlflow_colour():
    # the default config has ~90 rows (sweeps, ablations): more than any palette
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs
    from mintrl.report.run_metrics import run_colour

    runs = resolve_runs(load_config("config/config.yaml"), "config/config.yaml")
    colours = [run_colour(runs, name) for name in [*runs, "base", "teacher", "teacher-lab1"]]
    assert len(runs) > 50 and len(set(colours)) == len(colours)
    assert run_colour(runs, "grpo-s0") == "#1f77b4"  # the figures' GRPO blue
