"""Code reward: a program passes every test of its problem, run in the sandbox.

Three test formats cover the paper's benchmarks (docs/design.md §3: expected outputs never enter
the sandbox; results are compared here, in the parent, with strict types):

- ``stdin``: each case feeds ``input`` on stdin; stdout must equal ``output`` line by line,
  compared as LiveCodeBench does (lines stripped; numbers also token by token as decimals).
  LiveCodeBench stdin tests, DeepCoder / TACO, Codeforces.
- ``functional``: each case calls ``fn_name(*args)`` (a method of ``class Solution`` when the
  program defines one, as in LeetCode-style problems); the returned value must equal
  ``output`` (or one of ``outputs_any``) with the same types. LiveCodeBench functional
  tests, HumanEval+ / MBPP+ inputs.
- ``assert``: a test program with ``check(candidate)`` (HumanEval). When its asserts are plain
  (``assert candidate(args) == value`` and the like, ``mintrl.rewards.assert_split``), only
  the calls run in the sandbox and the values are compared here (157 of HumanEval's 164
  problems). The rest (loops, random inputs, helpers: 7) run whole in the sandbox after the
  candidate, which they see through a wrapper that refuses results that are not plain
  values; they pass when the program reaches its end, shown by a fresh random token printed
  last, so a candidate that exits early (``sys.exit(0)``) fails. Those tests share the
  candidate's process, so a program that reads the token out of its own code can still
  forge that end. HumanEval+, MBPP+ and LiveCodeBench are read as functional or stdin tests
  (``mintrl.datasets``): all of them are compared here.

``CodeTests`` is the one normalised form; dataset loaders build it from their own records.
"""

from __future__ import annotations

import ast
import math
import re
import secrets
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from mintrl.rewards.assert_split import SplitTest, passes, split_asserts
from mintrl.sandbox import run_python

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL)


@dataclass(frozen=True)
class CodeTests:
    """A problem's tests in one normalised form (see the module docstring)."""

    format: Literal["stdin", "functional", "assert"]
    # stdin: {input, output}; functional: {args, output | output_repr | outputs_any}
    cases: list[dict[str, Any]] = field(default_factory=list)
    fn_name: str | None = None  # functional: the function (or Solution method) to call
    program: str = ""  # assert: the test program, e.g. HumanEval's `def check(candidate)`
    entry_point: str | None = None  # assert: check(entry_point) is called after `program`
    prelude: str = ""  # prepended when the response lacks the entry point (a completion)
    atol: float = 0.0  # functional: absolute tolerance for expected floats (EvalPlus' atol)
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


def read_literal(text: str) -> Any:
    """``ast.literal_eval`` that also reads ``inf`` and ``nan`` (how ``repr`` prints those
    floats). Raises ValueError on anything else that is not a literal."""
    special = {"inf": math.inf, "nan": math.nan}

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Name) and node.id in special:
            return special[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            if type(value) not in (int, float, complex):
                raise ValueError("unary sign on a non-number")
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [walk(e) for e in node.elts]
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Dict):
            return {walk(k): walk(v) for k, v in zip(node.keys, node.values, strict=True)}
        return ast.literal_eval(node)  # constants, complex numbers; raises on the rest

    return walk(ast.parse(text.strip(), mode="eval").body)


def strict_equal(got: Any, want: Any, rel_tol: float = 1e-9) -> bool:
    """Equal values of equal types: ``True`` is not ``1``, ``6.0`` is not ``6``, ``"1"`` is
    not ``1``; an expected list accepts a tuple (JSON has no tuples: LiveCodeBench compares a
    tuple result with a JSON list), an expected tuple wants a tuple (EvalPlus' outputs are
    Python's, stored as ``output_repr``); an expected float accepts an int or float within
    ``rel_tol``. Only plain literals reach here (the sandbox's output is read back with
    ``read_literal``), so no object can claim to equal everything."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, float):
        if type(got) not in (int, float):
            return False
        if math.isnan(want):
            return math.isnan(got)
        return math.isclose(got, want, rel_tol=rel_tol, abs_tol=rel_tol)
    if isinstance(want, list | tuple):
        kinds = (tuple,) if isinstance(want, tuple) else (list, tuple)
        return (isinstance(got, kinds) and len(got) == len(want)
                and all(strict_equal(g, w, rel_tol) for g, w in zip(got, want, strict=True)))
    if isinstance(want, set | frozenset):
        return isinstance(got, set | frozenset) and got == want
    if isinstance(want, dict):
        return (type(got) is dict and got.keys() == want.keys()
                and all(strict_equal(got[k], want[k], rel_tol) for k in want))
    return type(got) is type(want) and got == want


def _same_text(got: str, want: str) -> bool:
    """stdout against the expected output as LiveCodeBench compares them: both stripped, line
    by line with each line stripped; a line that differs as text may still match token by
    token as decimal numbers (``0.50`` and ``0.5``)."""
    a, b = got.strip().split("\n"), want.strip().split("\n")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        x, y = x.strip(), y.strip()
        if x == y:
            continue
        tx, ty = x.split(), y.split()
        try:
            if len(tx) != len(ty) or any(Decimal(u) != Decimal(v) for u, v in zip(tx, ty,
                                                                              strict=True)):
                return False
        except InvalidOperation:
            return False
    return True


def _compiles(program: str) -> bool:
    try:
        compile(program, "<candidate>", "exec")  # compiling runs nothing
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


_CALL = """

inf, nan = float("inf"), float("nan")  # the args literal below may hold them

def _mintrl_target():
    if {fn!r} in globals():
        return globals()[{fn!r}]
    return getattr(globals()["Solution"](), {fn!r})

_out = [_mintrl_target()(*_args) for _args in {args!r}]  # a raise fails the whole program
print({token!r})
print(repr(_out))
"""


def call_outputs(program: str, fn_name: str, args: list[list[Any]], timeout_s: float
                 ) -> list[Any] | str:
    """``fn_name(*a)`` for each ``a`` in ``args``, run in the sandbox in one process: the
    results, read back as literals, or the reason there are none. (Dataset loaders also use
    it to get a canonical solution's expected outputs.)"""
    token = secrets.token_hex(8)
    res = run_python(program + _CALL.format(fn=fn_name, args=[list(a) for a in args],
                                            token=token), timeout_s=timeout_s)
    if res.timed_out:
        return "timeout"
    lines = res.stdout.rstrip("\n").split("\n")
    if res.returncode != 0 or len(lines) < 2 or lines[-2] != token:
        return f"runtime error (exit {res.returncode})"
    try:
        got = read_literal(lines[-1])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "a result is not a literal"
    if not isinstance(got, list) or len(got) != len(args):
        return "wrong number of results"
    return got


def _run_functional(program: str, tests: CodeTests) -> CodeResult:
    got = call_outputs(program, tests.fn_name, [c["args"] for c in tests.cases], tests.timeout_s)
    if isinstance(got, str):
        return CodeResult(0.0, got)
    tol = tests.atol or 1e-9
    for k, (g, case) in enumerate(zip(got, tests.cases, strict=True)):
        # TACO accepts a call-based answer equal to the output or to its only element.
        if "output_repr" in case:  # Python values JSON cannot hold (tuples, sets, inf)
            wants = [read_literal(case["output_repr"])]
        else:
            wants = case["outputs_any"] if "outputs_any" in case else [case["output"]]
        if not any(strict_equal(g, w, tol) for w in wants):
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


_SPLIT = """

_mintrl_f = {entry}

{tests}

_mintrl_out = [{calls}]
print({token!r})
print(repr(_mintrl_out))
"""

# In-sandbox tests (those that cannot be split) see the candidate through this wrapper, defined
# before the candidate's code: a result that is not a plain value (an object that equals
# everything, an int or str subclass) raises instead of reaching the test.
_GUARD = """
def {name}(fn, _types=(int, float, complex, str, bytes, bool, type(None)), _type=type,
           _all=all, _dict=dict, _seqs=(list, tuple, set, frozenset), _exc=TypeError):
    def plain(v):
        t = _type(v)
        if t in _types:
            return True
        if t in _seqs:
            return _all(plain(x) for x in v)
        return t is _dict and _all(plain(k) and plain(x) for k, x in v.items())

    def guarded(*args, **kwargs):
        value = fn(*args, **kwargs)
        if not plain(value):
            raise _exc("the candidate returned a value that is not plain")
        return value

    return guarded
"""


def _run_split(program: str, tests: CodeTests, split: SplitTest) -> CodeResult:
    token = secrets.token_hex(8)
    calls = ", ".join(f"_mintrl_f({args})" for args in split.calls)
    res = run_python(program + _SPLIT.format(entry=tests.entry_point, tests=tests.program,
                                             calls=calls, token=token),
                     timeout_s=tests.timeout_s)
    if res.timed_out:
        return CodeResult(0.0, "timeout")
    lines = res.stdout.rstrip("\n").split("\n")
    if res.returncode != 0 or len(lines) < 2 or lines[-2] != token:
        return CodeResult(0.0, f"tests failed (exit {res.returncode})")
    try:
        got = read_literal(lines[-1])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return CodeResult(0.0, "a result is not a literal")
    if not isinstance(got, list) or len(got) != len(split.checks):
        return CodeResult(0.0, "wrong number of results")
    for k, (value, check) in enumerate(zip(got, split.checks, strict=True)):
        if not passes(check, value):
            return CodeResult(0.0, f"failed assert {k + 1}")
    return CodeResult(1.0, "passed")


def _run_assert(program: str, tests: CodeTests) -> CodeResult:
    """Split tests (``assert_split``) are compared here; the rest run whole in the sandbox,
    passing when the program reaches its end, shown by a fresh random token printed last."""
    split = split_asserts(tests.program) if tests.entry_point else None
    if split is not None:
        return _run_split(program, tests, split)
    token, guard = secrets.token_hex(8), f"_mintrl_guard_{secrets.token_hex(4)}"
    call = f"\ncheck({guard}({tests.entry_point}))\n" if tests.entry_point else "\n"
    res = run_python(f"{_GUARD.format(name=guard)}\n{program}\n\n{tests.program}{call}"
                     f"print({token!r})\n", timeout_s=tests.timeout_s)
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
