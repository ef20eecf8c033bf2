"""Code task ``intfn``: write a small integer function from a spec, one named value per line.

Prompt ``"f(x): a add 3, b mul x, c sub 7\\n"``; reference response (blank lines between the lines
of the function make every line its own step)::

    ```python
    def f(x):

        a = x + 3

        b = a * x

        c = b - 7

        return c
    ```

With a fact table (``mintrl.tasks.facts``), an argument ``k3`` is a constant the spec names
but does not give. The program defines each constant it uses on its own line before the
function, in order of first use, and the body names it (``b mul k3`` -> ``k3=23``, then
``    b = a * k3``)::

    ```python

    k3=23

    def f(x):

        a = x + 3

        b = a * k3

        return b
    ```

so the earliest wrong constant is the earliest wrong step and its correction is the fact
alone (five tokens, as arith's ``#3=23``).

Reward: the function passes every hidden test, run in the sandbox (``mintrl.sandbox``);
expected outputs never enter the sandbox. Step oracle: each line is evaluated on the hidden
inputs with a small arithmetic-only interpreter (no model code is executed in-process) and
its value compared with the reference's intermediate value at that line.
"""

from __future__ import annotations

import ast
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mintrl.sandbox import run_python
from mintrl.steps import step_texts
from mintrl.tasks.base import OracleVerdict, Problem, attach_reference, text_oracle
from mintrl.tasks.facts import FactTable

NAMES = "abcdeghi"  # skips f (the function) and x (the input)
OPS = {"add": "+", "sub": "-", "mul": "*", "mod": "%"}  # mod: understood, not generated
N_TESTS = 6
HEADER = "```python\ndef f(x):"
FENCE, DEF = "```python", "def f(x):"  # with constants, the two are steps of their own
_FENCE_BODY = re.compile(r"```(?:python)?\n(.*?)(?:\n```|$)", re.DOTALL)
_LIMIT = 10**30  # values beyond this are treated as wrong (keeps the interpreter cheap)


def reference_lines(ops: list[tuple[str, str]], shown: dict[int, int] | None = None) -> list[str]:
    """The solution's steps after the opening fence line(s): one ``k<e>=<value>`` line per
    constant (``shown[e]``, in order of first use) and ``def f(x):`` when there are
    constants, then the function's body lines, which name a constant ``k<e>``."""
    lines, prev, consts = [], "x", {}
    for name, (op, arg) in zip(NAMES, ops, strict=False):
        if arg.startswith("k"):
            consts.setdefault(arg, f"{arg}={shown[int(arg[1:])]}")
        lines.append(f"    {name} = {prev} {OPS[op]} {arg}")
        prev = name
    head = [*consts.values(), DEF] if consts else []
    return head + lines + [f"    return {prev}\n```"]


def reference_steps(ops: list[tuple[str, str]], shown: dict[int, int] | None = None) -> list[str]:
    """Every step of the reference solution: the header (``HEADER``, or with constants the
    fence alone) and ``reference_lines``."""
    lines = reference_lines(ops, shown)
    return [FENCE if DEF in lines else HEADER, *lines]


def extract_code(response: str) -> str:
    """The first fenced code block (an unclosed fence runs to the end), else the text."""
    m = _FENCE_BODY.search(response)
    return m.group(1) if m else response


class _Unsafe(Exception):
    pass


def _eval(node: ast.AST, env: dict[str, int]) -> int:
    """Evaluate integer arithmetic (+ - * % //, unary -, names, ints); anything else raises."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Add):
            v = a + b
        elif isinstance(node.op, ast.Sub):
            v = a - b
        elif isinstance(node.op, ast.Mult):
            v = a * b
        elif isinstance(node.op, (ast.Mod, ast.FloorDiv)) and b != 0:
            v = a % b if isinstance(node.op, ast.Mod) else a // b
        else:
            raise _Unsafe
        if abs(v) > _LIMIT:
            raise _Unsafe
        return v
    raise _Unsafe


def line_values(line: str, envs: list[dict[str, int]]) -> tuple[str, list[int]] | None:
    """For ``name = expr`` or ``return expr``: (name or "return", its value per input)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    try:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            return "return", [_eval(stmt.value, e) for e in envs]
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return stmt.targets[0].id, [_eval(stmt.value, e) for e in envs]
    except (_Unsafe, RecursionError):
        return None
    return None


def constants(rng: np.random.Generator, ops: list, facts: FactTable | None, kind: str,
              view: str) -> tuple[dict, dict[int, int]]:
    """Turn the arguments of some of ``ops`` into the table's constants, in place
    (``("mul", "k3")``); returns the problem's spec entry and the value each constant shows
    in this problem's solution (as ``mintrl.tasks.arith.lookups``)."""
    if facts is None:
        return {}, {}
    placed, shown = facts.place(rng, len(ops), kind, view)
    for i, key in placed:
        ops[i] = (ops[i][0], f"k{key}")
    return {"facts": {"kind": kind, "keys": [key for _, key in placed]}}, shown


class CodeTask:
    name = "intfn"
    has_oracle = True

    def sample(self, rng: np.random.Generator, difficulty: int, facts: FactTable | None = None,
               kind: str = "known", view: str = "true") -> Problem:
        ops: list[tuple[str, str]] = []
        for _ in range(difficulty):
            # No mod: an error before `mod m` cancels whenever it is off by a multiple of m
            # (a teacher's wrong chains passed the tests 5.9 % of the time with mod in the mix);
            # mul never by 1, which a program could skip and still pass.
            op = ("add", "sub", "mul")[int(rng.integers(0, 3))]
            if rng.random() < 0.25:
                arg = "x"
            else:
                arg = str(int(rng.integers(2 if op == "mul" else 1, 10)))
            ops.append((op, arg))
        spec_facts, shown = constants(rng, ops, facts, kind, view)
        inputs = [int(v) for v in rng.choice(np.arange(-9, 10), size=N_TESTS, replace=False)]
        steps = reference_steps(ops, shown)
        values = self._reference_values(steps[1:], inputs)
        # Each op is keyed by the name of the value it defines: a model copies an operand by
        # finding the name, not by counting commas (positional copying blurred the digits of
        # long specs: a 3-layer teacher reached only 2 % on the hard split that way).
        keyed = zip(NAMES, ops, strict=False)
        spec_text = ", ".join(f"{name} {op} {arg}" for name, (op, arg) in keyed)
        return Problem(
            id=f"intfn-{difficulty}-" + "_".join(f"{op}{arg}" for op, arg in ops),
            task=self.name,
            difficulty=difficulty,
            prompt=f"f(x): {spec_text}\n",
            solution="\n\n".join(steps),
            spec={
                "ops": [list(o) for o in ops],
                "inputs": inputs,
                "outputs": values[-1],
                "values": values,
                **spec_facts,
            },
        )

    @staticmethod
    def _reference_values(lines: list[str], inputs: list[int]) -> list[list[int] | None]:
        """Each line's value per input; None for ``def f(x):`` (graded by its text)."""
        envs = [{"x": x} for x in inputs]
        values = []
        for line in lines:
            if line == DEF:
                values.append(None)
                continue
            name, vals = line_values(line.replace("\n```", ""), envs)
            for e, v in zip(envs, vals, strict=True):
                e[name] = v
            values.append(vals)
        return values

    def privileged_prompt(self, problem: Problem) -> str:
        return attach_reference(problem.prompt, problem.solution)

    def rewards(self, problems: list[Problem], responses: list[str]) -> list[float]:
        """Run each distinct (problem, program) once in the sandbox, two at a time."""
        keys = [(p.id, extract_code(r)) for p, r in zip(problems, responses, strict=True)]
        unique = {k: p for k, p in zip(keys, problems, strict=True)}
        with ThreadPoolExecutor(max_workers=2) as pool:
            passed = list(pool.map(lambda kp: _passes(kp[1], kp[0][1]), unique.items()))
        results = dict(zip(unique, passed, strict=True))
        return [float(results[k]) for k in keys]

    def oracle(self, problem: Problem, response: str, finished: bool = True) -> OracleVerdict:
        ref = step_texts(problem.solution)
        got = step_texts(response)
        envs = [{"x": x} for x in problem.spec["inputs"]]
        for j, text in enumerate(got):
            partial = (not finished) and j == len(got) - 1
            want = ref[j] if j < len(ref) else None
            if want is None or partial or j == 0 or want == DEF:
                # Header, def and partial lines are graded by text (a half-written line has
                # no value).
                v = text_oracle(ref[j : j + 1], [text], finished=not partial)
                if v.first_wrong is not None:
                    return OracleVerdict(j, want, len(got), len(ref))
                continue
            is_last = j == len(ref) - 1
            body = text[: -len("\n```")] if is_last and text.endswith("\n```") else text
            parsed = line_values(body, envs)
            expected = problem.spec["values"][j - 1]
            ok = parsed is not None and parsed[1] == expected and (parsed[0] == "return") == is_last
            if not ok:
                return OracleVerdict(j, want, len(got), len(ref))
            for e, v in zip(envs, parsed[1], strict=True):
                e[parsed[0]] = v
        return OracleVerdict(None, None, len(got), len(ref))


# The harness prints repr() of the outputs, which the parent reads with ast.literal_eval:
# importing json in the child cost 10 ms of a 17 ms sandbox run.
_HARNESS = """

_out = []
for _x in {inputs!r}:
    try:
        _out.append(f(_x))
    except Exception:
        _out.append(None)
print(repr(_out))
"""


def _passes(problem: Problem, code: str) -> bool:
    """True when ``code`` defines f and f(x) equals the expected output on every hidden input.

    Syntax is checked here (compiling runs nothing); the program runs in the sandbox, which
    only ever sees the inputs; outputs are compared here with strict types.
    """
    try:
        compile(code, "<candidate>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    res = run_python(code + _HARNESS.format(inputs=problem.spec["inputs"]), timeout_s=5.0)
    if res.returncode != 0 or res.timed_out:
        return False
    try:
        got = ast.literal_eval(res.stdout.strip().splitlines()[-1])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, IndexError):
        return False
    want = problem.spec["outputs"]
    return (
        isinstance(got, list)
        and len(got) == len(want)
        and all(type(g) is int and g == w for g, w in zip(got, want, strict=True))
    )
