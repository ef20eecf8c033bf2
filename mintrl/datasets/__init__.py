"""Readers of the paper setting's datasets, each in its own published format, into ``Problem``s.

    load_problems("livecodebench", "test6.jsonl", revision="0fe84c39...")

A reader yields ``(row_id, Problem)`` for a row it could read and ``(row_id, reason)`` for one
it could not; ``load_problems`` counts the bad rows, names them, and either skips them or
fails (``on_bad``), so nothing is dropped silently. The formats, with where each was
confirmed, are in ``docs/datasets.md``.

Problems of the paper setting belong to two tasks: ``math`` (``spec = {"answer": str}``,
rewarded by math-verify) and ``code`` (``spec = {"tests": CodeTests fields}``, rewarded in the
sandbox); see ``mintrl.tasks.real``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

# Each reader module registers its formats on import.
from mintrl.datasets import code_sets, math_sets  # noqa: F401
from mintrl.datasets.formats import READERS, LoadReport, Row, records, source_name
from mintrl.tasks.base import Problem

__all__ = ["READERS", "LoadReport", "Row", "load_problems", "records", "source_name"]


def load_problems(fmt: str, path: str | Path, *, revision: str | None = None,
                  on_bad: Literal["skip", "fail"] = "skip", **options: Any) -> LoadReport:
    """Read ``path`` with the reader registered as ``fmt``; bad rows are skipped and reported,
    or (``on_bad="fail"``) raise a ValueError naming them."""
    reader = READERS.lookup(fmt)
    report = LoadReport(str(path))
    for rid, got in reader(path, revision=revision, **options):
        if isinstance(got, Problem):
            report.problems.append(got)
        else:
            report.bad[rid] = got
    if report.bad and on_bad == "fail":
        raise ValueError(f"unreadable rows in {fmt} file {report.summary()}")
    return report
