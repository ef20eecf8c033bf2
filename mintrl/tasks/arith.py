"""Math task ``arith``: a chain of operations on a three-digit register, modulo 1000.

Prompt ``"047 +8 *3 -5\\n"``; reference response, one step per operation, then the answer::

    047+8=055

    055*3=165

    165-5=160

    answer: 160

With a fact table (``mintrl.tasks.facts``), an operation ``#e`` adds the value of entry e.
The lookup is its own step, then the addition (``#3=23``, then ``055+23=078``), so the
earliest wrong fact is the earliest wrong step and its correction is the fact alone (five
tokens: the few digits that carry the knowledge are most of it).

Every operation is a bijection of Z/1000 (+d, -d with d in 1..9, a fact's +NN; *d with d in
{3, 7, 9}, which are prime to 1000), so a chain with a single wrong step always ends on a wrong
answer, and skipped steps scramble the result: the base's wrong chains on the hard split hit the
right answer 0.19 % of the time (with a two-digit register it was 1.2 %, so Pass@1
measured luck). Values are zero-padded so that digits line up.
"""

from __future__ import annotations

import re

import numpy as np

from mintrl.steps import step_texts
from mintrl.tasks.base import OracleVerdict, Problem, attach_reference, text_oracle
from mintrl.tasks.facts import FactTable

_ANSWER = re.compile(r"answer:\s*(-?\d+)\s*$", re.MULTILINE)


def apply_op(value: int, op: str, operand: int, mod: int) -> int:
    if op == "+":
        return (value + operand) % mod
    if op == "-":
        return (value - operand) % mod
    if op == "*":
        return (value * operand) % mod
    raise ValueError(f"unknown arith operation {op!r}")


def solve(start: int, ops: list[tuple[str, int]], mod: int,
          shown: dict[int, int] | None = None) -> tuple[list[str], int]:
    """Reference steps and final value for a chain; a lookup ``("#", e)`` adds ``shown[e]``
    (the value of entry e that this solution shows)."""
    width = len(str(mod - 1))
    steps, v = [], start
    for op, d in ops:
        if op == "#":
            nxt = apply_op(v, "+", shown[d], mod)
            steps.append(f"#{d}={shown[d]}")
            steps.append(f"{v:0{width}d}+{shown[d]}={nxt:0{width}d}")
        else:
            nxt = apply_op(v, op, d, mod)
            steps.append(f"{v:0{width}d}{op}{d}={nxt:0{width}d}")
        v = nxt
    steps.append(f"answer: {v:0{width}d}")
    return steps, v


def parse_answer(response: str) -> int | None:
    """The last ``answer: N`` line of a response, or None when there is none."""
    found = _ANSWER.findall(response)
    return int(found[-1]) if found else None


def lookups(rng: np.random.Generator, ops: list, facts: FactTable | None, kind: str,
            view: str) -> tuple[dict, dict[int, int]]:
    """Turn some of ``ops`` into lookups of the table's entries, in place (``("#", e)``);
    returns the problem's spec entry (``{"facts": {"kind", "keys"}}``, empty without a table)
    and the value each looked-up entry shows in this problem's solution."""
    if facts is None:
        return {}, {}
    placed, shown = facts.place(rng, len(ops), kind, view)
    for i, key in placed:
        ops[i] = ("#", key)
    return {"facts": {"kind": kind, "keys": [key for _, key in placed]}}, shown


class ArithTask:
    name = "arith"
    has_oracle = True

    def __init__(self, mod: int = 1000, add_max: int = 9, mul_operands=(3, 7, 9)):
        self.mod, self.add_max, self.mul_operands = mod, add_max, mul_operands

    def sample(self, rng: np.random.Generator, difficulty: int, facts: FactTable | None = None,
               kind: str = "known", view: str = "true") -> Problem:
        start = int(rng.integers(0, self.mod))
        # With facts, addition only: what the base lacks should be the facts, not arithmetic
        # (a 2-layer base reached 98 % on known facts in 800 steps without *, 77 % with it).
        kinds = "+-*" if self.mul_operands and facts is None else "+-"
        ops: list[tuple[str, int]] = []
        for _ in range(difficulty):
            op = kinds[int(rng.integers(0, len(kinds)))]
            if op == "*":
                d = int(rng.choice(self.mul_operands))
            else:
                d = int(rng.integers(1, self.add_max + 1))
            ops.append((op, d))
        spec_facts, shown = lookups(rng, ops, facts, kind, view)
        steps, final = solve(start, ops, self.mod, shown)
        width = len(str(self.mod - 1))
        prompt = f"{start:0{width}d} " + " ".join(f"{o}{d}" for o, d in ops) + "\n"
        return Problem(
            id=f"arith-{difficulty}-{start:0{width}d}" + "".join(f"{o}{d}" for o, d in ops),
            task=self.name,
            difficulty=difficulty,
            prompt=prompt,
            solution="\n\n".join(steps),
            spec={"start": start, "ops": [[o, d] for o, d in ops], "answer": final,
                  **spec_facts},
        )

    def privileged_prompt(self, problem: Problem) -> str:
        return attach_reference(problem.prompt, problem.solution)

    def rewards(self, problems: list[Problem], responses: list[str]) -> list[float]:
        out = []
        for p, r in zip(problems, responses, strict=True):
            got = parse_answer(r)
            out.append(float(got is not None and got == int(p.spec["answer"])))
        return out

    def oracle(self, problem: Problem, response: str, finished: bool = True) -> OracleVerdict:
        return text_oracle(step_texts(problem.solution), step_texts(response), finished)
