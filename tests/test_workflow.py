"""The Snakemake workflow end to end on the micro config, in a scratch directory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(ROOT / "tests" / "micro.yaml"),
           "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("wf")
    res = _snakemake(work)
    assert res.returncode == 0, res.stderr[-3000:]
    return work


def test_main_job_evaluates_base_and_teacher_of_each_task(finished_run):
    for task in ("arith", "intfn"):
        for role in ("base", "teacher"):
            metrics = json.loads(
                (finished_run / f"results/eval/lab/{task}/{role}/metrics.json").read_text())
            assert set(metrics["splits"]) == {"easy", "hard"}
            assert (finished_run / f"results/models/{task}/{role}/config.json").exists()
            assert (finished_run / f"results/logs/pretrain/{task}_{role}.log").exists()


def test_a_finished_run_has_nothing_left_to_do(finished_run):
    res = _snakemake(finished_run, "-n")
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


def test_bad_config_fails_before_any_job_naming_the_key(tmp_path):
    res = _snakemake(tmp_path, "-n", "--config", "threads=0")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "threads: Input should be greater than or equal to 1" in out
    assert not (tmp_path / "results" / "data").exists()


def test_editing_one_teacher_reruns_only_that_teacher_and_its_evaluation(finished_run):
    res = _snakemake(finished_run, "-n", "--config",
                     'tasks={"intfn": {"teacher": {"steps": 41}}}')
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    planned = [line.split("output:")[1].strip() for line in out.splitlines()
               if line.strip().startswith("output:")]
    assert all("intfn/teacher" in p for p in planned), planned
    assert any("models/intfn/teacher" in p for p in planned)
    assert any("eval/lab/intfn/teacher" in p for p in planned)
