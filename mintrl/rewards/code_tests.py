"""Code reward: a program passes every test of its problem, run in the sandbox.

Three test formats cover the paper's benchmarks (DESIGN.md §3: expected outputs never enter
the sandbox; results are compared here, in the parent, with strict types):

- ``stdin``: each case feeds ``input`` on stdin; stdout must equal ``output`` (trailing
  whitespace of each line and trailing blank lines ignored). LiveCodeBench stdin tests,
  DeepCoder / TACO.
- ``functional``: each case calls ``fn_name(*args)`` (a method of ``class Solution`` when the
  program defines one, as in LeetCode-style problems); the returned value must equal
  ``output`` with the same types. LiveCodeBench functional tests, HumanEval+ / MBPP+ inputs.
- ``assert``: a test program runs after the candidate (HumanEval's ``check(candidate)``); it
  passes when the program reaches its end, shown by a fresh random token printed last, so a
  candidate that exits early (``sys.exit(0)``) fails.

``CodeTests`` is the one normalised form; dataset loaders build it from their own records.
"""

from __future__ import annotations

import ast
import math
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from mintrl.sandbox import run_python

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL)


@dataclass(frozen=True)
class CodeTests:
    """A problem's tests in one normalised form (see the module docstring)."""

    format: Literal["stdin", "functional", "assert"]
    cases: list[dict[str, Any]] = field(default_factory=list)  # stdin: input/output;
    # functional: args/output
    fn_name: str | None = None  # functional: the function (or Solution method) to call
    program: str = ""  # assert: the test program, e.g. HumanEval's `def check(candidate)`
    entry_point: str | None = None  # assert: check(entry_point) is called after `program`
    prelude: str = ""  # prepended when the response lacks the entry point (a completion)
    timeout_s: float = 6.0  # wall-clock bound per sandbox run


@dataclass(frozen=True)
class CodeResult:
    reward: float
    detail: str  # "passed", "failed case 3", "timeout", "syntax error", ...


def extract_program(response: str) -> str:
    """The last fenced code block of a response (an unclosed fence runs to the end); the
    whole text when it has no fence."""
    blocks = _FENCE.findall(response)
    return blocks[-1] if blocks else response


def strict_equal(got: Any, want: Any, rel_tol: float = 1e-9) -> bool:
    """Equal values of equal types: ``True`` is not ``1``, ``6.0`` is not ``6``, ``"1"`` is
    not ``1``; lists and tuples compare as sequences (JSON has no tuples); an expected float
    accepts an int or float within ``rel_tol``. Only plain literals reach here (the sandbox's
    output is read with ``ast.literal_eval``), so no object can claim to equal everything."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, float):
        return (type(got) in (int, float)
                and math.isclose(got, want, rel_tol=rel_tol, abs_tol=rel_tol))
    if isinstance(want, list | tuple):
        return (isinstance(got, list | tuple) and len(got) == len(want)
                and all(strict_equal(g, w, rel_tol) for g, w in zip(got, want, strict=True)))
    if isinstance(want, dict):
        return (type(got) is dict and got.keys() == want.keys()
                and all(strict_equal(got[k], want[k], rel_tol) for k in want))
    return type(got) is type(want) and got == want


def _same_text(got: str, want: str) -> bool:
    def norm(s: str) -> list[str]:
        lines = [line.rstrip() for line in s.replace("\r\n", "\n").split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    return norm(got) == norm(want)


def _compiles(program: str) -> bool:
    try:
        compile(program, "<candidate>", "exec")  # compiling runs nothing
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


_CALL = """

def _mintrl_target():
    if {fn!r} in globals():
        return globals()[{fn!r}]
    return getattr(globals()["Solution"](), {fn!r})

_out = [_mintrl_target()(*_args) for _args in {args!r}]  # a raise fails the whole program
print({token!r})
print(repr(_out))
"""


def _run_functional(program: str, tests: CodeTests) -> CodeResult:
    token = secrets.token_hex(8)
    args = [list(c["args"]) for c in tests.cases]
    res = run_python(program + _CALL.format(fn=tests.fn_name, args=args, token=token),
                     timeout_s=tests.timeout_s)
    if res.timed_out:
        return CodeResult(0.0, "timeout")
    lines = res.stdout.rstrip("\n").split("\n")
    if res.returncode != 0 or len(lines) < 2 or lines[-2] != token:
        return CodeResult(0.0, f"runtime error (exit {res.returncode})")
    try:
        got = ast.literal_eval(lines[-1])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return CodeResult(0.0, "a result is not a literal")
    if not isinstance(got, list) or len(got) != len(tests.cases):
        return CodeResult(0.0, "wrong number of results")
    for k, (g, case) in enumerate(zip(got, tests.cases, strict=True)):
        if not strict_equal(g, case["output"]):
            return CodeResult(0.0, f"failed case {k}")
    return CodeResult(1.0, "passed")


def _run_stdin(program: str, tests: CodeTests) -> CodeResult:
    for k, case in enumerate(tests.cases):
        res = run_python(program, timeout_s=tests.timeout_s, stdin=str(case["input"]))
        if res.timed_out:
            return CodeResult(0.0, f"timeout on case {k}")
        if res.returncode != 0:
            return CodeResult(0.0, f"runtime error on case {k} (exit {res.returncode})")
        if not _same_text(res.stdout, str(case["output"])):
            return CodeResult(0.0, f"failed case {k}")
    return CodeResult(1.0, "passed")


def _run_assert(program: str, tests: CodeTests) -> CodeResult:
    token = secrets.token_hex(8)
    call = f"\ncheck({tests.entry_point})\n" if tests.entry_point else "\n"
    res = run_python(f"{program}\n\n{tests.program}{call}print({token!r})\n",
                     timeout_s=tests.timeout_s)
    if res.timed_out:
        return CodeResult(0.0, "timeout")
    last = res.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    if res.returncode != 0 or last != token:
        return CodeResult(0.0, f"tests failed (exit {res.returncode})")
    return CodeResult(1.0, "passed")


_RUNNERS = {"stdin": _run_stdin, "functional": _run_functional, "assert": _run_assert}


def score_program(response: str, tests: CodeTests) -> CodeResult:
    """Reward of one response: its program (last fenced block) against ``tests``."""
    program = extract_program(response)
    entry = tests.entry_point or tests.fn_name
    if tests.prelude and entry and not re.search(rf"\bdef\s+{re.escape(entry)}\s*\(", program):
        program = tests.prelude + program  # a completion of the prompt's signature
    if not _compiles(program):
        return CodeResult(0.0, "syntax error")
    if tests.format != "assert" and not tests.cases:
        return CodeResult(0.0, "no tests")
    return _RUNNERS[tests.format](program, tests)
