"""Two main-command tables, cell by cell: the same table on two machines or under two kernel
settings, when only the Markdown tables are at hand (a committed result file, another
machine's ``results/summary/main/table.md``).

    python benchmarks/table_cells.py REFERENCE.md NEW.md --out FILE.md \
        [--changed opd --changed intfn:mintrl-const ...] [--title "how each was run"]

Each file's first table under a line ``Pass@1 (%)`` is read (the summarize stage's layout,
kept verbatim in ``benchmarks/results/main_table*.md``). A cell is the whole text of
``value [interval]``, so equal means equal to the decimal, interval included. ``--changed``
names the rows (``row``) or a task's rows (``task:row``) whose settings differ between the two
runs: they are listed but not counted, so the verdict covers only the cells that should agree.
Exit status 1 when a counted cell differs. With ``--spread`` (``benchmarks/pair_spread.py``'s
file for the same config), a cell that differs is set beside its range over (lab seed, RL seed)
pairs, and the exit status is 1 only when some cell moved by more than that range: then the
other setting moves the table more than another pair of seeds would.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HEADING = "Pass@1 (%)"


def read_cells(path: Path) -> dict[tuple[str, str], str]:
    """{(row, "task/split"): "value [lo, hi]"} of the first Pass@1 table of ``path``."""
    lines = path.read_text().split(HEADING, 1)
    if len(lines) < 2:
        raise SystemExit(f"{path}: no line '{HEADING}' above a table")
    header, cells = None, {}
    for line in lines[1].splitlines():
        if not line.startswith("|"):
            if header:
                break
            continue
        parts = [p.strip().replace("**", "") for p in line.strip().strip("|").split("|")]
        if header is None:
            header = parts
        elif not set(line) <= set("|-: "):
            if len(parts) != len(header):
                raise SystemExit(f"{path}: row '{parts[0]}' has {len(parts)} cells, the header "
                                 f"{len(header)}")
            cells.update({(parts[0], col): val
                          for col, val in zip(header[1:], parts[1:], strict=True)
                          if col != "average"})
    if not cells:
        raise SystemExit(f"{path}: the table under '{HEADING}' has no rows")
    return cells


def is_changed(key: tuple[str, str], changed: list[str]) -> bool:
    row, bench = key
    task = bench.split("/")[0]
    return row in changed or f"{task}:{row}" in changed


def read_spread(path: Path) -> dict[tuple[str, str], float]:
    """{(row, "task/split"): range of Pass@1 over pairs} from a pair_spread.py file."""
    spread = {}
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(parts) >= 6 and "/" in parts[1]:
            pairs = (len(parts) - 4) // 2  # row, cell, pairs, range, the pairs' deltas, range
            spread[(parts[0], parts[1])] = float(parts[2 + pairs])
    if not spread:
        raise SystemExit(f"{path}: no '| row | task/split | ...' lines (pair_spread.py's table)")
    return spread


def value(cell: str) -> float:
    return float(cell.split("[")[0])


def compare(ref: dict, new: dict, changed: list[str], spread: dict | None = None
            ) -> tuple[list[str], int, int, int]:
    """(Markdown lines, counted cells, counted cells that differ, of those the ones that moved
    by more than their range over pairs; all that differ when no ``spread`` is given)."""
    lines = ["| row | cell | reference | new | | difference | range over pairs |",
             "|---|---|---|---|---|---:|---:|"]
    counted = differ = beyond = 0
    for key in ref:
        a, b = ref[key], new.get(key, "(missing)")
        gap = width = ""
        if is_changed(key, changed):
            mark = "settings differ"
        else:
            counted += 1
            differ += a != b
            mark = "=" if a == b else "**differs**"
            if a != b and spread is not None and key in spread and b != "(missing)":
                d, width = value(b) - value(a), spread[key]
                beyond += abs(d) > width
                gap, width = f"{d:+.1f}", f"{width:.1f}"
            elif a != b:
                beyond += 1
        lines.append(f"| {key[0]} | {key[1]} | {a} | {b} | {mark} | {gap} | {width} |")
    return lines, counted, differ, beyond


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="markdown file to write")
    ap.add_argument("--changed", action="append", default=[], metavar="[TASK:]ROW",
                    help="a row whose settings differ between the runs (not counted)")
    ap.add_argument("--title", default="", help="a paragraph under the heading")
    ap.add_argument("--spread", type=Path, help="pair_spread.py's file: a cell's range over "
                    "(lab seed, RL seed) pairs, the measure a difference is set against")
    args = ap.parse_args(argv)
    spread = read_spread(args.spread) if args.spread else None
    lines, counted, differ, beyond = compare(read_cells(args.reference), read_cells(args.new),
                                             args.changed, spread)
    verdict = (f"{counted - differ} of {counted} cells with the same settings are equal to the "
               f"decimal, interval included; {differ} differ.")
    if spread is not None:
        verdict += (f" Of those, {beyond} moved by more than the cell's range over the pairs "
                    f"of `{args.spread}`.")
    text = ["# Two main-command tables, cell by cell", "", args.title, "", verdict, "",
            f"Reference: `{args.reference}`; new: `{args.new}`.", "", *lines, ""]
    args.out.write_text("\n".join(text))
    print(verdict)
    return 1 if beyond else 0


if __name__ == "__main__":
    sys.exit(main())
