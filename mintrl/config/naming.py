"""Names: of the lab's models per lab seed, of runs (method, overrides, (lab seed, RL seed)),
and the keys that say where a run stops rather than what it does."""

from __future__ import annotations

import re
from typing import Any

ROLES = ("base", "teacher")


def lab_suffix(lab_seed: int) -> str:
    """What a lab seed adds to the names of its models, filtered prompts and pass rates: nothing
    for lab 0 (the paths every finished result already has), ``-lab<k>`` for the others."""
    if lab_seed < 0:
        raise ValueError(f"lab seed {lab_seed} < 0")
    return f"-lab{lab_seed}" if lab_seed else ""


def lab_model(role: str, lab_seed: int) -> str:
    """The name of ``role``'s model pre-trained with ``lab_seed``, in its paths
    (``results/models/<task>/<name>``, ``results/eval/lab/<task>/<name>``) and in MLflow:
    ``base``, ``teacher`` for lab seed 0, else ``base-lab1``, ``teacher-lab2``, ..."""
    if role not in ROLES:
        raise ValueError(f"lab_model: role {role!r} is not one of {ROLES}")
    return role + lab_suffix(lab_seed)


def split_lab_model(name: str) -> tuple[str, int] | None:
    """``lab_model``'s inverse: ``teacher-lab2`` -> ("teacher", 2), ``base`` -> ("base", 0);
    None for a name that is no lab model (a run's)."""
    m = re.fullmatch(r"(base|teacher)(?:-lab([1-9][0-9]*))?", name)
    return (m[1], int(m[2] or 0)) if m else None


# Keys that say where a run stops and where its jobs end, not what it does: they are left out
# of run names and of the settings that make Snakemake rerun a job, so a finished run can be
# extended (its segments' bounds are in their paths).
RUN_LENGTH_KEYS = frozenset({"iterations", "eval_every", "iterations_per_job"})
# Keys a task's ``rl`` may not set: they shape a run's jobs (one DAG for all its tasks) or name
# what the run is.
TASK_FIXED_KEYS = RUN_LENGTH_KEYS | {"method", "tasks", "intervention_iterations"}


def run_name(method: str, overrides: dict[str, Any], seed: int | None,
             lab_seed: int = 0) -> str:
    """``grpo-s0``, ``grpo-lr3e-05-temperature0.7-s1``, ``grpo-lab1-s1``: method, overrides
    (sorted), lab seed (none for lab 0: today's names), seed (none when ``seed`` is None: the
    name of the row the pairs average into)."""
    parts = [method]
    for key in sorted(set(overrides) - RUN_LENGTH_KEYS):
        value = overrides[key]
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{key.split('.')[-1]}{text}")
    if seed is not None:
        parts.append(seed_suffix(seed, lab_seed))
    return re.sub(r"[^A-Za-z0-9_.,=+-]", "_", "-".join(parts))


def seed_suffix(seed: int, lab_seed: int = 0) -> str:
    """``s1``, ``lab1-s1``: what tells a row's runs apart (lab 0 keeps today's names)."""
    return f"s{seed}" if lab_seed == 0 else f"lab{lab_seed}-s{seed}"
