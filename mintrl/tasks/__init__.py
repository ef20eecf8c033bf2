"""Task registry: ``get_task(name)``; an unknown name lists the known ones. The toy tasks
(``arith``, ``intfn``) generate their problems; ``math`` and ``code`` read them from datasets."""

from __future__ import annotations

from mintrl.tasks.arith import ArithTask
from mintrl.tasks.base import OracleVerdict, Problem, Task
from mintrl.tasks.code import CodeTask
from mintrl.tasks.real import CodeTestsTask, MathAnswerTask

_TASKS: dict[str, Task] = {}


def register_task(task: Task) -> None:
    if task.name in _TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    _TASKS[task.name] = task


def get_task(name: str) -> Task:
    try:
        return _TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(_TASKS)}") from None


def grade(problems: list[Problem], responses: list[str]) -> list[float]:
    """Each response's verifiable reward from its problem's task, one batched call per task
    (the code task runs its sandbox jobs in parallel within a call)."""
    rewards = [0.0] * len(problems)
    by_task: dict[str, list[int]] = {}
    for i, p in enumerate(problems):
        by_task.setdefault(p.task, []).append(i)
    for name, idx in by_task.items():
        got = get_task(name).rewards([problems[i] for i in idx], [responses[i] for i in idx])
        for i, r in zip(idx, got, strict=True):
            rewards[i] = float(r)
    return rewards


register_task(ArithTask())
register_task(CodeTask())
register_task(MathAnswerTask())  # the paper setting: datasets in mintrl.datasets
register_task(CodeTestsTask())

__all__ = ["OracleVerdict", "Problem", "Task", "get_task", "grade", "register_task"]
