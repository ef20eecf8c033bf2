"""What every task provides: a problem generator, a reward, and a step oracle."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mintrl.steps import step_texts
from mintrl.tasks.facts import FactTable


@dataclass(frozen=True)
class Problem:
    """One task instance. ``spec`` holds what the reward and oracle need (JSON-able)."""

    id: str
    task: str
    difficulty: int  # number of operation steps
    prompt: str  # what the policy sees
    solution: str  # reference response, steps separated by blank lines, no EOS
    spec: dict[str, Any] = field(default_factory=dict)
    chat: bool = False  # shown as a chat turn (mintrl.prompting), not as plain text

    def to_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "difficulty": self.difficulty,
            "prompt": self.prompt,
            "solution": self.solution,
            "spec": json.dumps(self.spec, sort_keys=True),
            "chat": self.chat,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any], task: str | None = None) -> Problem:
        """From a table row; ``task`` overrides (or stands in for) the row's task column.
        Only ``id``, ``prompt`` and what the task's reward reads in ``spec`` are required."""
        for key in ("id", "prompt"):
            if key not in row:
                raise KeyError(f"problem row {row.get('id', '?')!r} has no {key!r} column")
        spec = row.get("spec") or {}
        name = task or row.get("task")
        if not name:
            raise KeyError(f"problem row {row['id']!r} has no task; pass a reward name")
        return cls(
            id=str(row["id"]),
            task=str(name),
            difficulty=int(row.get("difficulty") or 0),
            prompt=str(row["prompt"]),
            solution=str(row.get("solution") or ""),
            spec=json.loads(spec) if isinstance(spec, str) else dict(spec),
            chat=bool(row.get("chat") or False),
        )


@dataclass(frozen=True)
class OracleVerdict:
    """The step oracle's answer for a (possibly partial) response."""

    first_wrong: int | None  # index of the earliest wrong step, None if all seen steps are right
    correct_step: str | None  # the reference text of that step (what an ideal intervener writes)
    n_steps: int  # steps in the response
    n_reference_steps: int  # steps in the reference solution


class Task(Protocol):
    """A toy task. Implementations are registered in ``mintrl.tasks``."""

    name: str
    has_oracle: bool  # whether ``oracle`` grades steps (toy tasks) or raises (dataset tasks)

    def sample(self, rng: np.random.Generator, difficulty: int, facts: FactTable | None = None,
               kind: str = "known", view: str = "true") -> Problem:
        """Draw one problem with ``difficulty`` operation steps; with a fact table, some look
        up entries of ``kind`` (``FactTable.draw_keys``), written as ``view`` shows them."""

    def privileged_prompt(self, problem: Problem) -> str:
        """The prompt with the reference solution attached (for self-intervention)."""

    def rewards(self, problems: list[Problem], responses: list[str]) -> list[float]:
        """Verifiable reward per response: 1.0 correct, 0.0 not."""

    def oracle(self, problem: Problem, response: str, finished: bool = True) -> OracleVerdict:
        """Earliest wrong step of ``response`` (its last step is partial unless finished)."""


PRIVILEGED_HEADER = "Reference solution:\n"


def attach_reference(prompt: str, solution: str) -> str:
    """Privileged context: the reference solution, placed before the plain prompt.

    The plain prompt stays the suffix, so a model trained on both forms answers the same
    way; only the intervener ever sees this form (the stored training prompt is plain).
    """
    return f"{PRIVILEGED_HEADER}{solution}\n====\n{prompt}"


def text_oracle(
    reference: list[str], steps: list[str], finished: bool, sep: str = "\n\n"
) -> OracleVerdict:
    """Grade steps by exact text against the reference steps.

    A complete step is right when equal to the reference step at its index; the last step
    of an unfinished response is right while it is a prefix of that reference step (plus
    the separator that may be half written). Steps beyond the reference are wrong.
    """
    for j, got in enumerate(steps):
        want = reference[j] if j < len(reference) else None
        partial = (not finished) and j == len(steps) - 1
        if want is None:
            ok = False
        elif partial:
            ok = (want + sep).startswith(got)
        else:
            ok = got == want
        if not ok:
            return OracleVerdict(j, want, len(steps), len(reference))
    return OracleVerdict(None, None, len(steps), len(reference))


def strict_and_step_accuracy(task: Task, problem: Problem, response: str) -> tuple[bool, float]:
    """Strict correctness (every step right, none missing) and step accuracy (share of the
    reference steps that are right before the first error)."""
    v = task.oracle(problem, response, finished=True)
    n_right = v.n_steps if v.first_wrong is None else v.first_wrong
    n_right = min(n_right, v.n_reference_steps)
    strict = v.first_wrong is None and v.n_steps == v.n_reference_steps
    return strict, n_right / max(1, v.n_reference_steps)


def reference_steps(problem: Problem) -> list[str]:
    return step_texts(problem.solution)
