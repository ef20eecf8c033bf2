"""``python -m mintrl.rewards``: re-score a JSONL file of responses so rewards can be audited.

    python -m mintrl.rewards --domain math IN.jsonl OUT.jsonl
    python -m mintrl.rewards --domain code IN.jsonl OUT.jsonl

Each input row is ``{"id", "response", "reference"}``: for math the reference is
``{"answer": ...}``, for code the problem record in its dataset's own format (HumanEval's, or
``{"tests": {...}}``). Each output row is ``{"id", "reward", "detail"}``, in input order. A row
that cannot be read gets ``"reward": null`` and a detail saying why; such rows are listed on
stderr and make the exit status 1, after every other row has been scored and written.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mintrl.cli import command_line
from mintrl.io import atomic_path
from mintrl.progress import progress as progress_bar
from mintrl.rewards import MathVerifier, problem_tests, score_program
from mintrl.sandbox import SandboxUnavailable, allow_unisolated


def read_rows(path: Path) -> list[dict[str, Any] | str]:
    """The file's rows; a line that is not a JSON object becomes an error string."""
    rows: list[dict[str, Any] | str] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                rows.append(f"line {n}: not JSON ({err.msg})")
                continue
            rows.append(row if isinstance(row, dict) else f"line {n}: not a JSON object")
    return rows


def _check_row(row: dict[str, Any] | str, domain: str) -> str | None:
    if isinstance(row, str):
        return row
    missing = [k for k in ("id", "response", "reference") if k not in row]
    if missing:
        return f"row {row.get('id', '?')}: missing {missing}"
    if not isinstance(row["response"], str):
        return f"row {row['id']}: response must be a string"
    if domain == "math" and (not isinstance(row["reference"], dict)
                             or "answer" not in row["reference"]):
        return f"row {row['id']}: reference must be {{'answer': ...}}"
    return None


def score_rows(rows: list[dict[str, Any] | str], domain: str, workers: int = 2,
               progress: bool = True) -> list[dict[str, Any]]:
    """One output row per input row, in order."""
    out: list[dict[str, Any] | None] = [None] * len(rows)
    todo = []
    for i, row in enumerate(rows):
        problem = _check_row(row, domain)
        if problem is None and domain == "code":
            try:
                todo.append((i, problem_tests(row["reference"])))
            except ValueError as err:
                problem = f"row {row['id']}: {err}"
        elif problem is None:
            todo.append((i, row["reference"]["answer"]))
        if problem is not None:
            rid = row.get("id") if isinstance(row, dict) else None
            out[i] = {"id": rid, "reward": None, "detail": f"bad row: {problem}"}
    bar = progress_bar(total=len(todo), desc=f"rewards {domain}", unit="row",
                       disable=not progress)
    if domain == "math":
        with MathVerifier() as verifier:
            for i, gold in todo:
                res = verifier.check(rows[i]["response"], gold)
                out[i] = {"id": rows[i]["id"], "reward": res.reward, "detail": res.detail}
                bar.update()
    else:
        def one(item):
            i, tests = item
            return i, score_program(rows[i]["response"], tests)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for i, res in pool.map(one, todo):
                out[i] = {"id": rows[i]["id"], "reward": res.reward, "detail": res.detail}
                bar.update()
    bar.close()
    return out  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    ap = command_line("python -m mintrl.rewards", __doc__)
    ap.add_argument("--domain", choices=["math", "code"], required=True,
                    help="math: math-verify on the last boxed answer; code: the sandbox")
    ap.add_argument("input", type=Path, help="JSONL rows {id, response, reference}")
    ap.add_argument("output", type=Path, help="JSONL rows {id, reward, detail}")
    ap.add_argument("--workers", type=int, default=2, help="parallel sandbox runs (code)")
    ap.add_argument("--unisolated", action="store_true",
                    help="run code without isolation where none works here (the config's "
                         "sandbox.unisolated): it can then read the whole filesystem")
    args = ap.parse_args(argv)
    allow_unisolated(args.unisolated)
    rows = read_rows(args.input)
    try:
        out = score_rows(rows, args.domain, args.workers)
    except SandboxUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with atomic_path(args.output) as tmp:
        tmp.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    bad = [r["detail"] for r in out if r["reward"] is None]
    scored = [r["reward"] for r in out if r["reward"] is not None]
    mean = sum(scored) / len(scored) if scored else float("nan")
    print(f"[rewards] {args.domain}: {len(scored)} rows scored, mean reward {mean:.4f}, "
          f"{len(bad)} bad rows -> {args.output}", flush=True)
    for detail in bad:
        print(f"[rewards] {detail}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    from mintrl.cli import run_main

    sys.exit(run_main(main))
