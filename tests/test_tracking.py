"""MLflow logging through mintrl.tracking: idempotent by (run, key, step), serialised."""

import threading

from mintrl.tracking import log_run, read_runs


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
