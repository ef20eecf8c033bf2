"""Resume after any kill: a micro sweep whose processes (Snakemake itself and its jobs) are
SIGKILLed at three random moments, each time resumed with the README's resume command
(``snakemake --unlock``, then the same command, which reruns incomplete jobs), ends with the
rollouts, checkpoints, metrics and MLflow points of an uninterrupted run."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# wall-clock figures and memory peaks differ run to run
TIMING = ("time/", "seconds", "tokens_per_s", "_s", "memory/")
# logged only by a segment that resumed after a kill: the record of the resume, not a result
RESUME_MARKERS = ("startup/resumed_after",)


def _config(tmp: Path) -> Path:
    """The micro config on one task with a GRPO and a MInTRL run (CI time)."""
    cfg = yaml.safe_load((ROOT / "tests" / "micro.yaml").read_text())
    cfg["tasks"] = {"arith": cfg["tasks"]["arith"]}
    cfg["runs"] = [{"method": "grpo", "name": "grpo"},
                   {"method": "mintrl", "name": "mintrl-proxy"}]
    cfg.pop("tune", None)
    cfg.pop("ablation_reference", None)
    path = tmp / "kill.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _cmd(work: Path, config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
            "--directory", str(work), "--configfile", str(config), "--cores", "2", *extra]


def _untimed(data):
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items()
                if not any(t in k for t in TIMING)}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def _outputs(work: Path) -> dict[str, object]:
    """What a user compares: rollouts, checkpoint weights, metrics, evaluations."""
    res = work / "results"
    out: dict[str, object] = {}
    for p in sorted(res.glob("runs/**/rollouts.parquet")):
        out[str(p.relative_to(res))] = pq.read_table(p).to_pylist()
    for p in sorted(res.glob("runs/**/model/*.safetensors")):
        out[str(p.relative_to(res))] = p.read_bytes()
    for p in sorted([*res.glob("runs/**/metrics.json"), *res.glob("eval/**/metrics.json")]):
        out[str(p.relative_to(res))] = _untimed(json.loads(p.read_text()))
    return out


def _mlflow_points(work: Path) -> dict[tuple[str, str], list[int]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work / 'results' / 'mlflow.db'}")
    points = {}
    for exp in client.search_experiments():
        for run in client.search_runs([exp.experiment_id]):
            for key in run.data.metrics:
                if key.endswith(RESUME_MARKERS):
                    continue
                steps = [m.step for m in client.get_metric_history(run.info.run_id, key)]
                points[(run.data.tags.get("mintrl.run", run.info.run_name), key)] = sorted(steps)
    return points


@pytest.mark.slow
def test_three_sigkills_then_the_resume_command_give_the_uninterrupted_results(tmp_path):
    config = _config(tmp_path)
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    ref.mkdir(), killed.mkdir()
    t0 = time.monotonic()
    res = subprocess.run(_cmd(ref, config), capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    duration = time.monotonic() - t0

    rng = random.Random(8)
    moments = []
    for _ in range(3):
        proc = subprocess.Popen(_cmd(killed, config), start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        moments.append(round(rng.uniform(0.1, 0.45) * duration, 1))
        time.sleep(moments[-1])
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and every job it started
        proc.wait()
        subprocess.run(_cmd(killed, config, "--unlock"), capture_output=True, timeout=300)
    res = subprocess.run(_cmd(killed, config), capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (moments, res.stderr[-3000:])

    want, got = _outputs(ref), _outputs(killed)
    assert sorted(got) == sorted(want)
    differ = [k for k in want if got[k] != want[k]]
    assert differ == [], (moments, differ[:5])
    points = _mlflow_points(killed)
    assert points == _mlflow_points(ref)
    assert all(len(s) == len(set(s)) for s in points.values())  # each point logged once
