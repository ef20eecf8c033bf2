"""Assert-style tests split into calls and expected values, so the comparison runs in the
parent, outside the sandbox (docs/toy_lab.md, "The sandbox").

HumanEval's ``check(candidate)`` is a list of asserts. When every statement of it is one of

- ``assert candidate(ARGS) == LITERAL`` (either side), ``... != LITERAL``, also with both
  sides wrapped in one of ``tuple``/``list``/``set``/``sorted``/``str``,
- ``assert candidate(ARGS)`` / ``assert not candidate(ARGS)``,
- ``assert candidate(ARGS) is True|False|None``,
- ``assert abs(candidate(ARGS) - LITERAL) < LITERAL`` (or ``<=``),
- ``assert True``, a bare string or a bare name (skipped),

where a LITERAL may be constant arithmetic (``2.0 / 3.0``) and ``ARGS`` is free of
``candidate``, the test is *split*: the sandbox only computes the calls' results (their
arguments are evaluated there, after the test's module-level code) and prints them as
literals; the parent reads them back and applies each check. A returned object cannot
claim to equal everything there: only plain literals come back. Any other statement (loops,
helpers, random inputs) keeps the test whole, run in the sandbox.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

CONVERSIONS = {"tuple": tuple, "list": list, "set": set, "sorted": sorted, "str": str}
_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
               ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


@dataclass(frozen=True)
class Check:
    kind: str  # "eq", "ne", "true", "false", "is", "close"
    want: Any = None  # the literal compared with; for "close", (value, tolerance, strict)
    convert: str | None = None  # a CONVERSIONS name applied to the result first


@dataclass(frozen=True)
class SplitTest:
    calls: tuple[str, ...]  # source of each call's arguments, e.g. "[1, 2], k=3"
    checks: tuple[Check, ...]


def _constant(node: ast.AST) -> Any:
    """A literal, or arithmetic on numbers (``2.0 / 3.0``, ``3 + 5 + 7``), evaluated here."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        a, b = _constant(node.left), _constant(node.right)
        if type(a) not in (int, float) or type(b) not in (int, float):
            raise ValueError("arithmetic on a non-number")
        return _ARITHMETIC[type(node.op)](a, b)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_constant(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    return ast.literal_eval(node)


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, _constant(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError,
            ZeroDivisionError, OverflowError):
        return False, None


def _unwrap(node: ast.AST) -> tuple[str | None, ast.AST]:
    """``tuple(X)`` -> ("tuple", X); anything else -> (None, node)."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in CONVERSIONS and len(node.args) == 1 and not node.keywords):
        return node.func.id, node.args[0]
    return None, node


def _call_of(node: ast.AST, param: str) -> str | None:
    """The arguments' source when ``node`` is ``param(...)`` with ``param`` nowhere inside."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == param):
        return None
    inner = [*node.args, *(k.value for k in node.keywords)]
    if any(isinstance(n, ast.Name) and n.id == param for a in inner for n in ast.walk(a)):
        return None
    parts = [ast.unparse(a) for a in node.args]
    parts += [f"**{ast.unparse(k.value)}" if k.arg is None else f"{k.arg}={ast.unparse(k.value)}"
              for k in node.keywords]
    return ", ".join(parts)


def _close(test: ast.Compare, param: str) -> tuple[str, Check] | None:
    """``abs(candidate(ARGS) - LITERAL) < LITERAL``."""
    if not (len(test.ops) == 1 and isinstance(test.ops[0], ast.Lt | ast.LtE)):
        return None
    left = test.left
    if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
            and left.func.id == "abs" and len(left.args) == 1 and not left.keywords
            and isinstance(left.args[0], ast.BinOp) and isinstance(left.args[0].op, ast.Sub)):
        return None
    call = _call_of(left.args[0].left, param)
    ok_v, value = _literal(left.args[0].right)
    ok_t, tol = _literal(test.comparators[0])
    if call is None or not (ok_v and ok_t):
        return None
    return call, Check("close", (value, tol, isinstance(test.ops[0], ast.Lt)))


def _compare(test: ast.Compare, param: str) -> tuple[str, Check] | None:
    if len(test.ops) != 1:
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.Eq | ast.NotEq):
        kind = "eq" if isinstance(op, ast.Eq) else "ne"
        for a, b in ((left, right), (right, left)):
            (wrap, a), (wrap_b, inner) = _unwrap(a), _unwrap(b)
            both = wrap is not None and wrap_b == wrap  # tuple(candidate(x)) == tuple([1])
            call, (ok, want) = _call_of(a, param), _literal(inner if both else b)
            if call is not None and ok:
                return call, Check(kind, CONVERSIONS[wrap](want) if both else want, wrap)
        return None
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant) \
            and right.value in (True, False, None):
        call = _call_of(left, param)
        return None if call is None else (call, Check("is", right.value))
    return _close(test, param)


def _statement(st: ast.stmt, param: str) -> tuple[str, Check] | None | bool:
    """(call, check); True for a statement to skip; None when the test cannot be split."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant | ast.Name):
        return True
    if not isinstance(st, ast.Assert):
        return None
    test = st.test
    if isinstance(test, ast.Constant) and test.value is True:
        return True
    if isinstance(test, ast.Compare):
        return _compare(test, param)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = _call_of(test.operand, param)
        return None if call is None else (call, Check("false"))
    call = _call_of(test, param)
    return None if call is None else (call, Check("true"))


@lru_cache(maxsize=4096)
def split_asserts(program: str) -> SplitTest | None:
    """The calls and checks of ``def check(candidate)`` in a test program, or None when the
    program cannot be split (see the module doc)."""
    try:
        module = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or len(checks[0].args.args) != 1 or checks[0].decorator_list:
        return None
    param = checks[0].args.args[0].arg
    calls, tests = [], []
    for st in checks[0].body:
        got = _statement(st, param)
        if got is None:
            return None
        if got is not True:
            calls.append(got[0])
            tests.append(got[1])
    return SplitTest(tuple(calls), tuple(tests))


def passes(check: Check, got: Any) -> bool:
    """One check on a result read back as a plain literal (so ``==`` is the literals' own)."""
    if check.convert is not None:
        try:
            got = CONVERSIONS[check.convert](got)
        except (TypeError, ValueError):
            return False
    if check.kind == "eq":
        return got == check.want
    if check.kind == "ne":
        return got != check.want
    if check.kind == "true":
        return bool(got)
    if check.kind == "false":
        return not got
    if check.kind == "is":
        return got is check.want
    value, tol, strict = check.want
    if type(got) not in (int, float) or type(value) not in (int, float):
        return False
    gap = abs(got - value)
    return (gap < tol if strict else gap <= tol) and not math.isnan(gap)
