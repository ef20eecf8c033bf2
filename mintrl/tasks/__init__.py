"""Task registry: ``get_task(name)``; an unknown name lists the known ones."""

from __future__ import annotations

from mintrl.tasks.arith import ArithTask
from mintrl.tasks.base import OracleVerdict, Problem, Task
from mintrl.tasks.code import CodeTask

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


register_task(ArithTask())
register_task(CodeTask())

__all__ = ["OracleVerdict", "Problem", "Task", "get_task", "register_task"]
