"""The micro main command through ``workflow/profiles/slurm`` on a real SLURM cluster.

tests/slurm_cluster.py starts a single-node cluster from Debian's packages (slurmctld, slurmd,
slurmdbd on MariaDB, munge; loopback only) and Snakemake's SLURM executor plugin submits every
job of tests/micro.yaml with the profile's own requests (partitions, GPUs, memory, run time;
the node claims what they ask). The outputs must be the local run's (the session's micro run,
tests/conftest.py): the same files, the same evaluations. About 8 minutes on the 2-core
development machine, so it is marked slow (it still runs in CI). As root on Debian/Ubuntu the
README's test command installs the packages (tests/system_packages.py), so there a missing one
fails; elsewhere the test skips, saying why.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from slurm_cluster import missing_commands  # noqa: E402

pytestmark = pytest.mark.slow

# outputs that name their machine, job or time, not the run's results
NOT_COMPARED = ("logs", "benchmarks", "tracking", "mlflow.db", "mlartifacts")
GPU_RULES = {"filter_prompts", "evaluate_lab", "evaluate_run", "sft", "segment",
             "segment_handoff"}


def _cluster_or_skip() -> None:
    missing = missing_commands()
    if os.geteuid() == 0 and not missing:
        return
    why = (f"needs root and Debian's SLURM, munge and MariaDB packages (missing: {missing})"
           if missing else "starts SLURM's daemons: needs root")
    if os.geteuid() == 0 and shutil.which("apt-get"):
        pytest.fail(f"{why}: run `python tests/system_packages.py` (the README's test command)")
    pytest.skip(why)


def _results(work: Path) -> dict[str, Path]:
    base = work / "results"
    return {str(p.relative_to(base)): p for p in base.rglob("*")
            if p.is_file() and p.relative_to(base).parts[0] not in NOT_COMPARED}


def test_the_slurm_profile_runs_the_micro_workflow_with_the_local_runs_results(
        micro_run, tmp_path):
    _cluster_or_skip()
    work = tmp_path / "wf"
    work.mkdir()
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
                 "--directory", str(work), "--configfile", str(ROOT / "tests" / "micro.yaml"),
                 "--workflow-profile", str(ROOT / "workflow" / "profiles" / "slurm"),
                 "--slurm-init-seconds-before-status-checks", "1"]
    # the jobs as slurmdbd accounted them, read before the cluster stops
    sacct = ["sacct", "-X", "-n", "-P", "-a", "-o", "JobName,State,Partition,AllocTRES"]
    script = f"{subprocess.list2cmdline(snakemake)} && {subprocess.list2cmdline(sacct)}"
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "slurm_cluster.py"),
                          str(tmp_path / "cluster"), "--", "sh", "-c", script],
                         cwd=ROOT, capture_output=True, text=True, timeout=2400)
    assert res.returncode == 0, res.stderr[-3000:]

    jobs = [line.split("|") for line in res.stdout.splitlines() if line.count("|") == 3]
    assert jobs and all(state == "COMPLETED" for _, state, _, _ in jobs), jobs
    submitted = re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/rule_(\w+)/", res.stderr)
    assert len(submitted) == len(jobs)
    rules = set(submitted)
    assert {"pretrain", "segment", "evaluate_run", "track", "summarize"} <= rules
    # the profile's GPU rules went to its GPU partition with one GPU each, the rest to cpu
    for _, _, partition, tres in jobs:
        assert partition in ("cpu", "gpu")
        assert ("gres/gpu=1" in tres) == (partition == "gpu"), tres
    assert sum(p == "gpu" for _, _, p, _ in jobs) >= len(GPU_RULES)

    # the same files; the same evaluations (their timings aside); the same training up to
    # float rounding (the profile gives segments 8 threads, the local run 1: sums reorder)
    local, remote = _results(micro_run), _results(work)
    assert sorted(remote) == sorted(local)
    for name in local:
        if name.startswith("eval/") and name.endswith("metrics.json"):
            assert _untimed(remote[name])["splits"] == _untimed(local[name])["splits"], name
        elif name.startswith("runs/") and name.endswith("/metrics.json"):
            got, want = _untimed(remote[name]), _untimed(local[name])
            numbers = {k for k, v in want.items() if isinstance(v, int | float)}
            assert {k: got[k] for k in numbers} == pytest.approx(
                {k: want[k] for k in numbers}, rel=1e-4), name
            assert {k: got[k] for k in set(got) - numbers} == \
                {k: want[k] for k in set(want) - numbers}, name


def _untimed(path: Path) -> dict:
    """A metrics file without what depends on the machine's load: times, speeds, memory."""
    def keep(key: str) -> bool:
        return key not in ("seconds", "tokens_per_s") and not key.startswith(("time/",
                                                                                "memory/"))
    data = json.loads(path.read_text())
    return {k: ({s: {m: v for m, v in d.items() if keep(m)} for s, d in v.items()}
                if k == "splits" else v) for k, v in data.items() if keep(k)}
