"""Math datasets: MathArena's competitions (AIME 2025, AIME 2026, HMMT February 2025) for
evaluation and AceReason-Math for training. Answers are stored as strings (MathArena's AIME
files hold int64 answers, HMMT strings), and the reward is math-verify's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from mintrl.datasets.formats import READERS, Row, records, source_name
from mintrl.tasks.base import Problem

# The instruction Qwen3's math evaluations use: the reward reads the last \boxed{} answer.
MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


def math_problem(pid: str, statement: str, answer) -> Problem:
    return Problem(id=pid, task="math", difficulty=0,
                   prompt=f"{statement.strip()}\n\n{MATH_INSTRUCTION}", solution="",
                   spec={"answer": str(answer).strip()})


def _read_row(rid: str, row: dict) -> Problem | str:
    """A ``{problem, answer}`` row as a problem, or the reason it is not one."""
    answer = row.get("answer")
    if "__error__" in row:
        return row["__error__"]
    if not isinstance(row.get("problem"), str) or not row["problem"].strip():
        return "missing or empty 'problem'"
    if not ((isinstance(answer, int | float) and not isinstance(answer, bool))
            or (isinstance(answer, str) and answer.strip())):
        return f"missing or non-scalar 'answer' ({type(answer).__name__})"
    return math_problem(rid, row["problem"], answer)


@READERS.register("matharena")
def matharena(path: str | Path, revision: str | None = None, name: str | None = None
              ) -> Iterator[Row]:
    """MathArena's parquet (or jsonl): ``problem_idx`` (int), ``problem`` (LaTeX), ``answer``
    (int or string). Ids are ``<name>-<problem_idx>``; ``name`` defaults to the file's
    folder name (``aime_2025``)."""
    name = name or source_name(path)
    for n, row in enumerate(records(path)):
        rid = f"{name}-{row.get('problem_idx', f'row{n}')}"
        yield rid, _read_row(rid, row)


@READERS.register("acereason_math")
def acereason_math(path: str | Path, revision: str | None = None) -> Iterator[Row]:
    """AceReason-Math's ``math.jsonl``: ``problem`` and ``answer`` (strings: fractions, LaTeX,
    decimals; never cast to int). Rows have no id field: ids are ``acereason-<line>``."""
    for n, row in enumerate(records(path)):
        rid = f"acereason-{n}"
        yield rid, _read_row(rid, row)
