"""MLflow logging through mintrl.report.tracking: idempotent by (run, key, step), serialised."""

import threading
from pathlib import Path

from mintrl.report.tracking import log_run, read_runs


def _log(uri, metrics, params=None, name="grpo-s0"):
    return log_run(uri, "exp", name, params=params or {"rl.lr": "2e-05"},
                   tags={"method": "grpo", "seed": "0"}, metrics=metrics)


def test_logging_twice_keeps_one_point_per_key_and_step(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = _log(uri, [("arith/rollout/reward", 0.1, 1), ("arith/rollout/reward", 0.2, 2)])
    again = _log(uri, [("arith/rollout/reward", 0.1, 1), ("arith/rollout/reward", 0.2, 2),
                       ("arith/rollout/reward", 0.3, 3)])  # a resumed run adds iteration 3
    assert first["new_metrics"] == 2 and again["new_metrics"] == 1
    assert again["run_id"] == first["run_id"]
    (run,) = read_runs(uri, "exp")
    assert run["metrics"]["arith/rollout/reward"] == [(1, 0.1), (2, 0.2), (3, 0.3)]
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
    assert runs["base-lab1"]["metrics"]["arith/eval/easy/pass_at_1"] == [(0, 0.2)]
    loaded = load_config(config)
    named = resolve_runs(loaded)
    assert "run.lab_seed" not in run_params(loaded, named["grpo-s0"])[0]
    assert run_params(loaded, named["grpo-lab1-s1"])[0]["run.lab_seed"] == "1"
    with pytest.raises(SystemExit, match="unknown run 'teacher-lab1'"):
        track.main(["--config", str(config), "--run", "teacher-lab1", "--out",
                    str(tmp_path / "t.json")])
