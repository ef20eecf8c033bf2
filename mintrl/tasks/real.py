"""The paper setting's tasks: ``math`` and ``code`` problems read from real datasets
(``mintrl.datasets``), rewarded by ``mintrl.rewards``. They have no generator and no step
oracle: their judge is a model (``judge: chat``), and the reference solution for
self-intervention is whatever the dataset ships (often none)."""

from __future__ import annotations

import atexit
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mintrl.rewards import CodeTests, MathVerifier, score_program
from mintrl.tasks.base import OracleVerdict, Problem, attach_reference


class _RealTask:
    name = ""
    has_oracle = False

    def sample(self, rng: np.random.Generator, difficulty: int) -> Problem:
        raise TypeError(f"task {self.name!r} reads its problems from a dataset "
                        "(mintrl.datasets); it has no generator")

    def privileged_prompt(self, problem: Problem) -> str:
        if not problem.solution:
            raise ValueError(f"problem {problem.id}: no reference solution to give the "
                             "intervener (self-intervention needs one)")
        return attach_reference(problem.prompt, problem.solution)

    def oracle(self, problem: Problem, response: str, finished: bool = True) -> OracleVerdict:
        raise TypeError(f"task {self.name!r} has no step oracle: use a model judge "
                        "(judge: chat or likelihood)")


class MathAnswerTask(_RealTask):
    """``spec = {"answer": str}``; reward: math-verify on the last boxed answer."""

    name = "math"
    _verifier: MathVerifier | None = None

    def rewards(self, problems: list[Problem], responses: list[str]) -> list[float]:
        if MathAnswerTask._verifier is None:  # one worker per process, started on first use
            MathAnswerTask._verifier = MathVerifier()
            atexit.register(MathAnswerTask._verifier.close)
        return [MathAnswerTask._verifier.check(r, p.spec["answer"]).reward
                for p, r in zip(problems, responses, strict=True)]


class CodeTestsTask(_RealTask):
    """``spec = {"tests": CodeTests fields}``; reward: every test passes in the sandbox."""

    name = "code"

    def rewards(self, problems: list[Problem], responses: list[str]) -> list[float]:
        def one(pair):
            p, r = pair
            return score_program(r, CodeTests(**p.spec["tests"])).reward

        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(one, zip(problems, responses, strict=True)))
