"""Code datasets: LiveCodeBench (code_generation_lite), HumanEval+ and MBPP+ (EvalPlus
releases), DeepCoder-Preview (its taco, primeintellect, lcbv5 and codeforces subsets), each
read into ``CodeTests`` (stdin, functional or assert form) for the sandboxed reward."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import pickle
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mintrl.datasets.formats import READERS, Row, records, source_name
from mintrl.rewards.code_tests import CodeTests, call_outputs
from mintrl.tasks.base import Problem

PINNED = re.compile(r"[0-9a-f]{40}")
STDIN_INSTRUCTION = ("Read the input from standard input and write the answer to standard "
                     "output. Give the whole program in one ```python code block.")
LEVELS = {"easy": 1, "medium": 2, "hard": 3}


def code_problem(pid: str, prompt: str, tests: CodeTests, difficulty: int = 0) -> Problem:
    return Problem(id=pid, task="code", difficulty=difficulty, prompt=prompt, solution="",
                   spec={"tests": dataclasses.asdict(tests)})


def function_instruction(starter: str) -> str:
    return ("Complete the following code and give the whole solution in one ```python code "
            f"block.\n```python\n{starter.rstrip()}\n```")


# --- LiveCodeBench ---------------------------------------------------------------------------

class _StringsOnly(pickle.Unpickler):
    """LiveCodeBench's private tests are a pickled *string*: refuse every global, so decoding
    cannot run code even if a file were tampered with."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refused global {module}.{name} in a pickled test blob")


def decode_private_tests(blob: str, revision: str | None) -> list[dict[str, Any]]:
    """Plain JSON, or base64 -> zlib -> pickle (a JSON string) -> JSON, as LiveCodeBench
    writes them. The pickled form is decoded only from a pinned revision (40-hex commit)."""
    if not blob:
        return []
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        pass
    if not (revision and PINNED.fullmatch(revision)):
        raise ValueError("private tests are pickled: they are decoded only from a pinned "
                         f"dataset revision (a 40-hex commit), got revision={revision!r}")
    text = _StringsOnly(io.BytesIO(zlib.decompress(base64.b64decode(blob)))).load()
    if not isinstance(text, str):
        raise ValueError(f"pickled tests hold a {type(text).__name__}, expected a JSON string")
    return json.loads(text)


def lcb_tests(cases: list[dict[str, Any]], fn_name: str | None) -> CodeTests:
    """LiveCodeBench test cases ``{input, output, testtype}``: functional inputs are one JSON
    value per argument per line, outputs one JSON value; stdin ones are plain text."""
    kinds = {c.get("testtype") for c in cases}
    if kinds == {"functional"}:
        if not fn_name:
            raise ValueError("functional tests without metadata.func_name")
        norm = [{"args": [json.loads(line) for line in c["input"].split("\n")],
                 "output": json.loads(c["output"])} for c in cases]
        return CodeTests("functional", norm, fn_name=fn_name,
                         timeout_s=min(60.0, 6.0 + 0.5 * len(norm)))
    if kinds == {"stdin"}:
        return CodeTests("stdin", [{"input": c["input"], "output": c["output"]} for c in cases])
    raise ValueError(f"test types {sorted(map(str, kinds))}: expected all 'stdin' or all "
                     "'functional'")


@READERS.register("livecodebench")
def livecodebench(path: str | Path, revision: str | None = None) -> Iterator[Row]:
    """``livecodebench/code_generation_lite`` jsonl (test.jsonl ... test6.jsonl): string fields,
    ``public_test_cases`` JSON, ``private_test_cases`` JSON or pickled (see
    ``decode_private_tests``), ``metadata`` JSON with ``func_name`` for functional problems."""
    for n, row in enumerate(records(path)):
        rid = f"lcb-{row.get('question_id', f'row{n}')}"
        if "__error__" in row:
            yield rid, row["__error__"]
            continue
        try:
            if not str(row.get("question_content", "")).strip():
                raise ValueError("missing or empty 'question_content'")
            cases = (json.loads(row.get("public_test_cases") or "[]")
                     + decode_private_tests(row.get("private_test_cases") or "", revision))
            if not cases:
                raise ValueError("no test cases")
            meta = json.loads(row.get("metadata") or "{}")
            tests = lcb_tests(cases, meta.get("func_name"))
            starter = row.get("starter_code") or ""
            instruction = function_instruction(starter) if starter else STDIN_INSTRUCTION
            prompt = f"{row['question_content'].strip()}\n\n{instruction}"
            yield rid, code_problem(rid, prompt, tests, LEVELS.get(row.get("difficulty"), 0))
        except (ValueError, KeyError, TypeError, zlib.error, pickle.UnpicklingError) as err:
            yield rid, f"{type(err).__name__}: {err}"


# --- EvalPlus: HumanEval+ and MBPP+ ------------------------------------------------------------

def evalplus_tests(row: dict[str, Any], program: str, prelude: str) -> CodeTests:
    """Functional tests on ``base_input + plus_input``. EvalPlus ships no expected outputs:
    they are the canonical solution's, computed here in the sandbox (the inputs are data; the
    canonical solution is the dataset's code, still run only in the sandbox)."""
    inputs = list(row.get("base_input") or []) + list(row.get("plus_input") or [])
    if not inputs:
        raise ValueError("no base_input or plus_input")
    timeout = min(120.0, 10.0 + 0.05 * len(inputs))
    want = call_outputs(program, row["entry_point"], inputs, timeout)
    if isinstance(want, str):
        raise ValueError(f"canonical solution gave no expected outputs: {want}")
    # repr keeps what JSON would lose in the stored spec: tuples vs lists, sets, inf.
    cases = [{"args": a, "output_repr": repr(w)} for a, w in zip(inputs, want, strict=True)]
    return CodeTests("functional", cases, fn_name=row["entry_point"], prelude=prelude,
                     atol=float(row.get("atol") or 0.0), timeout_s=timeout)


def _evalplus(path: str | Path, full_program: bool) -> Iterator[Row]:
    for n, row in enumerate(records(path)):
        rid = str(row.get("task_id", f"row{n}"))
        if "__error__" in row:
            yield rid, row["__error__"]
            continue
        missing = [k for k in ("task_id", "prompt", "entry_point", "canonical_solution")
                   if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            yield rid, f"missing or empty fields {missing}"
            continue
        try:
            if full_program:  # MBPP+: the prompt is a docstring, the solution a whole def
                program, prelude = row["canonical_solution"], ""
                prompt = (f"{row['prompt'].strip()}\n\nWrite the Python function "
                          f"`{row['entry_point']}` in one ```python code block.")
            else:  # HumanEval+: the prompt is the signature and docstring to complete
                program, prelude = row["prompt"] + row["canonical_solution"], row["prompt"]
                prompt = function_instruction(row["prompt"])
            yield rid, code_problem(rid, prompt, evalplus_tests(row, program, prelude))
        except ValueError as err:
            yield rid, str(err)


@READERS.register("humaneval_plus")
def humaneval_plus(path: str | Path, revision: str | None = None) -> Iterator[Row]:
    """EvalPlus ``HumanEvalPlus-v0.1.10.jsonl(.gz)``: task_id, prompt, entry_point,
    canonical_solution, test, contract, base_input, atol, plus_input."""
    return _evalplus(path, full_program=False)


@READERS.register("mbpp_plus")
def mbpp_plus(path: str | Path, revision: str | None = None) -> Iterator[Row]:
    """EvalPlus ``MbppPlus-v0.2.0.jsonl(.gz)``: task_id, prompt (a docstring), entry_point,
    canonical_solution (a whole def), base_input, atol, plus_input, contract, assertion."""
    return _evalplus(path, full_program=True)


# --- DeepCoder-Preview -------------------------------------------------------------------------

def _text(value) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def deepcoder_tests(tests: Any, metadata: dict[str, Any]) -> CodeTests:
    """DeepCoder's ``tests`` (decoded JSON), whichever subset wrote it: TACO's
    ``{inputs, outputs, fn_name?}``; PrimeIntellect's ``[{type, input, output, fn_name?}]``;
    lcbv5's LiveCodeBench cases (func_name in metadata); Codeforces' ``[{input, output}]``."""
    if isinstance(tests, dict) and "inputs" in tests and "outputs" in tests:  # taco
        pairs = list(zip(tests["inputs"], tests["outputs"], strict=True))
        if tests.get("fn_name"):
            cases = [{"args": list(i), "output": o,
                      "outputs_any": [o, o[0]] if isinstance(o, list) and len(o) == 1 else [o]}
                     for i, o in pairs]
            return CodeTests("functional", cases, fn_name=tests["fn_name"],
                             timeout_s=min(60.0, 6.0 + 0.5 * len(cases)))
        return CodeTests("stdin", [{"input": _text(i), "output": _text(o)} for i, o in pairs])
    if not isinstance(tests, list) or not tests or not all(isinstance(t, dict) for t in tests):
        raise ValueError("tests must be TACO's {inputs, outputs} or a list of cases")
    if "testtype" in tests[0]:  # lcbv5
        return lcb_tests(tests, metadata.get("func_name"))
    if "type" in tests[0]:  # primeintellect
        kinds = {t["type"] for t in tests}
        if kinds == {"function_call"}:
            cases = [{"args": list(t["input"]), "output": t["output"][0]
                      if isinstance(t["output"], list) and len(t["output"]) == 1
                      else t["output"]} for t in tests]
            return CodeTests("functional", cases, fn_name=tests[0]["fn_name"],
                             timeout_s=min(60.0, 6.0 + 0.5 * len(cases)))
        if kinds == {"stdin_stdout"}:
            return CodeTests("stdin", [{"input": _text(t["input"]), "output": _text(t["output"])}
                                       for t in tests])
        raise ValueError(f"mixed test types {sorted(kinds)}")
    return CodeTests("stdin", [{"input": _text(t["input"]), "output": _text(t["output"])}
                               for t in tests])  # codeforces


@READERS.register("deepcoder")
def deepcoder(path: str | Path, revision: str | None = None, subset: str | None = None
              ) -> Iterator[Row]:
    """``agentica-org/DeepCoder-Preview-Dataset`` parquet: ``problem``, ``tests`` (a JSON
    string), and for lcbv5 ``starter_code`` and ``metadata`` (a dict or a JSON string).
    ``subset`` (taco, primeintellect, lcbv5, codeforces) names the ids; it defaults to the
    file's folder name."""
    subset = subset or source_name(path)
    for n, row in enumerate(records(path)):
        rid = f"deepcoder-{subset}-{n}"
        if "__error__" in row:
            yield rid, row["__error__"]
            continue
        try:
            if not str(row.get("problem") or "").strip():
                raise ValueError("missing or empty 'problem'")
            tests = row.get("tests")
            tests = json.loads(tests) if isinstance(tests, str) else tests
            meta = row.get("metadata") or {}
            meta = json.loads(meta) if isinstance(meta, str) else meta
            code_tests = deepcoder_tests(tests, meta)
            starter = row.get("starter_code") or ""
            instruction = (function_instruction(starter) if starter
                           else STDIN_INSTRUCTION if code_tests.format == "stdin"
                           else f"Write the Python function `{code_tests.fn_name}` in one "
                                "```python code block.")
            yield rid, code_problem(rid, f"{row['problem'].strip()}\n\n{instruction}", code_tests)
        except (ValueError, KeyError, TypeError, IndexError) as err:
            yield rid, f"{type(err).__name__}: {err}"
