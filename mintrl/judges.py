"""Judges: given a (partial) response, name the earliest wrong step among those under review.

One interface, several implementations (DESIGN.md §1.1). The oracle judge reads the task's step
oracle; model judges (teacher likelihood, prompted chat LLM) implement the same ``review``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mintrl.steps import split_steps
from mintrl.tasks import Problem, get_task


@dataclass(frozen=True)
class Verdict:
    """``first_wrong``: index of the earliest wrong step of the response (None: no error);
    ``cut``: character offset where that step starts (the response is cut there);
    ``parsed``: False when a model's answer could not be read (a counted "no verdict")."""

    first_wrong: int | None
    cut: int | None
    parsed: bool = True


class Judge(Protocol):
    def review(self, problems: list[Problem], responses: list[str], reviewed_from: list[int],
               finished: list[bool]) -> list[Verdict]:
        """Review the steps of each response that start at or after ``reviewed_from`` (the
        start of the prefix's unfinished step), in the context of the text before it."""


class OracleJudge:
    """The task's step oracle as judge: exact, free, the embedded default."""

    def review(self, problems, responses, reviewed_from, finished):
        out = []
        for p, text, done in zip(problems, responses, finished, strict=True):
            v = get_task(p.task).oracle(p, text, finished=done)
            steps = split_steps(text)
            if v.first_wrong is None or v.first_wrong >= len(steps):
                out.append(Verdict(None, None))
                continue
            # Steps before `reviewed_from` were accepted earlier; the oracle is deterministic,
            # so an earlier wrong step can only be the prefix's unfinished one, which is under
            # review again (a cut there also removes the tail of the prefix).
            cut = steps[v.first_wrong].start
            out.append(Verdict(v.first_wrong, max(cut, 0)))
        return out


JUDGES = {"oracle": OracleJudge}


def make_judge(name: str) -> Judge:
    try:
        return JUDGES[name]()
    except KeyError:
        raise KeyError(f"unknown judge {name!r}; known: {sorted(JUDGES)}") from None
