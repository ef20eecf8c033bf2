"""Compare two finished workflows file by file: the same table to the decimal, and every
rollout and evaluation sample equal (a refactor's check; also two machines').

    python benchmarks/compare_runs.py REFERENCE_DIR NEW_DIR [--out FILE.md]

Each directory is a working directory after ``snakemake`` (it holds ``results/``). Compared:
the summary tables (``results/summary/*/table.{md,csv}``, ``quality.md``) byte for byte, and
every Parquet file under ``results/runs`` and ``results/eval`` value for value, timing
columns aside. Prints and writes a Markdown report; exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

TIMING_COLUMNS = ("seconds", "tokens_per_s")
TABLES = ("table.md", "table.csv", "quality.md", "table_stats.csv")


def commit_of(workdir: Path) -> str:
    out = subprocess.run(["git", "-C", str(workdir), "log", "--oneline", "-1"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "(not a git checkout)"


def compare(ref: Path, new: Path) -> tuple[list[str], list[str]]:
    """(equal, differing) relative paths."""
    equal, differ = [], []
    for table in sorted((ref / "results" / "summary").glob("*/*")):
        if table.name not in TABLES:
            continue
        rel = table.relative_to(ref)
        other = new / rel
        same = other.exists() and other.read_bytes() == table.read_bytes()
        (equal if same else differ).append(str(rel))
    for root in ("runs", "eval"):
        for path in sorted((ref / "results" / root).rglob("*.parquet")):
            rel = path.relative_to(ref)
            other = new / rel
            if not other.exists():
                differ.append(f"{rel} (missing)")
                continue
            a, b = pd.read_parquet(path), pd.read_parquet(other)
            drop = [c for c in TIMING_COLUMNS if c in a.columns]
            try:
                pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop))
                equal.append(str(rel))
            except AssertionError:
                differ.append(str(rel))
    return equal, differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args(argv)
    equal, differ = compare(args.reference, args.new)
    tables = [p for p in equal if "/summary/" in p]
    lines = [
        "# Two workflows compared file by file",
        "",
        f"`python benchmarks/compare_runs.py {args.reference} {args.new}`",
        "",
        f"- reference: `{commit_of(args.reference)}`",
        f"- new: `{commit_of(args.new)}`",
        f"- summary tables equal byte for byte: {len(tables)} "
        f"({', '.join(sorted({Path(p).name for p in tables}))})",
        f"- Parquet files (rollouts of every iteration, evaluation samples) equal value for "
        f"value: {len(equal) - len(tables)}",
        f"- differing: {len(differ)}" + ("" if not differ else ": " + ", ".join(differ[:20])),
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
