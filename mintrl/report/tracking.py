"""MLflow tracking: the only module that imports mlflow.

Stages write metrics files first; ``log_run`` copies them into the MLflow store. Logging is
idempotent by (run, key, step) — a re-run logs only what is missing — and serialised by a file
lock beside the store, so parallel Snakemake jobs never write the sqlite file at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mintrl.config.runs import dotted

# No usage reporting from a research pipeline (and most clusters have no internet anyway).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

RUN_TAG = "mintrl.run"  # our run name: one MLflow run per pipeline run
HASH_TAG = "mintrl.config_hash"  # a changed config starts a new MLflow run
KIND_TAG = "mlflow.experimentKind"  # MLflow 3 opens an experiment on the view its kind names


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested dict -> {"a.b.c": "value"} (MLflow params are flat strings)."""
    return {k: json.dumps(v) if isinstance(v, list) else str(v)
            for k, v in dotted(data, prefix).items()}


def config_hash(params: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def git_commit() -> str:
    """Commit of the mintrl checkout (``-dirty`` with uncommitted changes), or ``unknown``."""
    repo = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "mintrl"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _store_dir(uri: str) -> Path:
    """Folder for the lock and artifacts: beside a sqlite file, or inside a file store."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///"):]).resolve().parent
    if uri.startswith("file:"):
        return Path(uri[len("file:"):]).resolve()
    if "://" not in uri:
        return Path(uri).resolve()
    return Path("results").resolve()  # a tracking server: lock locally anyway


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    folder = _store_dir(uri)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".mlflow.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def log_run(
    uri: str,
    experiment: str,
    name: str,
    *,
    params: dict[str, str],
    tags: dict[str, str],
    metrics: Iterable[tuple[str, float, int]],
    artifacts: Iterable[Path | tuple[Path, str]] = (),
    tables: dict[str, Any] | None = None,
    span: tuple[int | None, int | None] = (None, None),
) -> dict[str, Any]:
    """Create or find the MLflow run (name, config hash) and log what it lacks.

    ``metrics`` are (key, value, step) with step = iteration; ``artifacts`` are files, or
    (file, folder in the run's artifacts); ``tables``: artifact file -> DataFrame, logged as
    MLflow tables (shown in the UI); ``span``: (start, end) of what the run did, ms since the
    epoch (the run's times in the UI are the training's, not the logging's). Returns a
    summary: run id and how many metrics were new.
    """
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    chash = config_hash(params)
    with store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            location = (_store_dir(uri) / "mlartifacts").as_uri()
            exp_id = client.create_experiment(experiment, artifact_location=location)
        else:
            exp_id = exp.experiment_id
        if exp is None or KIND_TAG not in exp.tags:  # opens on its runs, not a GenAI view
            client.set_experiment_tag(exp_id, KIND_TAG, "custom_model_development")
        query = f"tags.`{RUN_TAG}` = '{name}' and tags.`{HASH_TAG}` = '{chash}'"
        found = client.search_runs([exp_id], filter_string=query, max_results=1)
        all_tags = {**tags, RUN_TAG: name, HASH_TAG: chash}
        if found:
            run_id = found[0].info.run_id
            have_params = found[0].data.params
        else:
            run_id = client.create_run(exp_id, run_name=name, tags=all_tags,
                                       start_time=span[0]).info.run_id
            have_params = {}
        new_params = [Param(k, v[:6000]) for k, v in params.items() if k not in have_params]
        for i in range(0, len(new_params), 100):
            client.log_batch(run_id, params=new_params[i : i + 100])
        client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in all_tags.items()])

        wanted: dict[str, dict[int, float]] = {}
        for key, value, step in metrics:
            wanted.setdefault(key, {})[int(step)] = float(value)
        now = int(time.time() * 1000)
        new = []
        for key, steps in wanted.items():
            logged = {m.step for m in client.get_metric_history(run_id, key)}
            new += [Metric(key, v, now, s) for s, v in sorted(steps.items()) if s not in logged]
        for i in range(0, len(new), 1000):
            client.log_batch(run_id, metrics=new[i : i + 1000])
        for item in artifacts:
            path, folder = item if isinstance(item, tuple) else (item, None)
            client.log_artifact(run_id, str(path), artifact_path=folder)
        for artifact_file, frame in (tables or {}).items():
            client.log_table(run_id, data=frame, artifact_file=artifact_file)
        client.set_terminated(run_id, end_time=span[1])
    return {"run_id": run_id, "experiment_id": exp_id, "config_hash": chash,
            "new_metrics": len(new), "metrics": sum(map(len, wanted.values()))}


def read_runs(uri: str, experiment: str) -> list[dict[str, Any]]:
    """Runs of an experiment with tags and metric histories (for tests and reports)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    out = []
    for run in client.search_runs([exp.experiment_id]):
        rid = run.info.run_id
        history = {k: sorted((m.step, m.value) for m in client.get_metric_history(rid, k))
                   for k in run.data.metrics}
        out.append({"run_id": run.info.run_id, "name": run.info.run_name,
                    "tags": run.data.tags, "params": run.data.params, "metrics": history,
                    "artifacts": [a.path for a in client.list_artifacts(run.info.run_id)]})
    return out
